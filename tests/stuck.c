/* stuck: a process whose threads are stuck in known functions, for the dump at a stop
 * (tests/dump.sh). Threads:
 *   stuck_in_mutex    waits for a mutex the main thread holds (and will never release)
 *   stuck_in_read     blocks reading a pipe nobody writes
 *   stuck_spinning    a busy loop
 * and the main thread waits in stuck_main_wait (pthread_join of the mutex thread: a deadlock).
 * Each thread has a name of its own: in-mutex, in-read, spinning (waiting, in-vfork below); the
 * main thread keeps the process's (stuck).
 * "stuck CHILDREN" also forks that many copies of itself first, with the same threads but for the
 * busy loop, which is stuck_waiting there (a condition variable nobody signals): a large tree
 * does not have the machine's cores spinning.
 * "stuck orphan" first leaves such a copy behind as an orphan (a double fork): it is reparented to
 * the supervisor, which must still be allowed to trace it (ptrace policies such as Yama's admit
 * descendants only).
 * "stuck pinned" first binds itself, and so every thread it starts, to the CPU it is on: the
 * scheduler then cannot move a sleeping thread to another CPU, which would make it forget when the
 * thread last ran (se.exec_start, that the dump's idle times read).
 * "stuck vfork" adds a thread stuck_in_vfork that vforks a child which never execs: the thread
 * waits in uninterruptible sleep (state D) for as long as the child lives, and cannot be traced.
 *
 * When every thread is where it will stay (the blocked ones asleep in the kernel, the spinning
 * one counting), it prints "ready stuck PID" on stdout, and on $HELPER_EVENTS when set (the FIFO
 * of tests/lib.sh), so the test knows the state it will find without sleeping. The main thread
 * cannot say so once it is asleep in its join, and saying so before leaves a window in which it
 * still runs: the thread that is not asleep says it instead (the spinning one, or in a copy the
 * waiting one, before it waits), once it sees the main thread asleep.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Not static: the names the test looks for stay as they are. */
void *stuck_in_mutex(void *arg);
void *stuck_in_read(void *arg);
void *stuck_spinning(void *arg);
void *stuck_waiting(void *arg);
void *stuck_in_vfork(void *arg);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile pid_t tid_mutex, tid_read;
static volatile unsigned long spins;
static volatile pid_t tid_wait;
static volatile pid_t tid_main_parked; /* set by the main thread as it goes to its join */
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t never_lock = PTHREAD_MUTEX_INITIALIZER;

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }
static int asleep(pid_t tid);
static void announce(void);

/* Has the main thread gone to sleep in its join (where it stays)? */
static int main_parked(void) { return tid_main_parked && asleep(tid_main_parked); }

__attribute__((noinline)) void *stuck_in_mutex(void *arg)
{
    (void)arg;
    tid_mutex = my_tid();
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

__attribute__((noinline)) void *stuck_in_read(void *arg)
{
    (void)arg;
    char c;
    tid_read = my_tid();
    ssize_t n = read(pipefd[0], &c, 1);
    return (void *)(intptr_t)n;
}

__attribute__((noinline)) void *stuck_spinning(void *arg)
{
    (void)arg;
    int announced = 0;
    for (;;) {
        spins++;
        __asm__ volatile("" ::: "memory");
        if (!announced && spins % 4096 == 0 && main_parked()) {
            announce();
            announced = 1;
        }
    }
    return NULL;
}

__attribute__((noinline)) void *stuck_waiting(void *arg)
{
    (void)arg;
    tid_wait = my_tid();
    while (!main_parked())
        sched_yield();
    announce();
    pthread_mutex_lock(&never_lock);
    for (;;)
        pthread_cond_wait(&never, &never_lock);
    return NULL;
}

static volatile pid_t tid_vfork;

__attribute__((noinline)) void *stuck_in_vfork(void *arg)
{
    (void)arg;
    tid_vfork = my_tid();
    /* The child shares our memory and stack until it exits: raw system calls only. */
    if (vfork() == 0)
        for (;;)
            syscall(SYS_pause);
    return NULL;
}

__attribute__((noinline)) static void stuck_main_wait(pthread_t t)
{
    pthread_join(t, NULL);
    __asm__ volatile("" ::: "memory");
}

/* Is thread tid asleep in the kernel now, in state S (or as given)? */
static int asleep_as(pid_t tid, char want)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == want;
}

static int asleep(pid_t tid) { return asleep_as(tid, 'S'); }

static void announce(void)
{
    char line[64];
    int n = snprintf(line, sizeof line, "ready stuck %d\n", (int)getpid());
    if (write(STDOUT_FILENO, line, (size_t)n) < 0)
        exit(1);
    const char *ev = getenv("HELPER_EVENTS");
    if (ev && *ev) {
        int fd = open(ev, O_WRONLY | O_APPEND);
        if (fd >= 0) {
            if (write(fd, line, (size_t)n) < 0)
                exit(1);
            close(fd);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int children = atoi(mode);
    bool copy = false, with_vfork = !strcmp(mode, "vfork");
    for (int i = 0; i < children && !copy; i++) {
        pid_t p = fork();
        if (p < 0)
            return 1;
        copy = p == 0; /* a copy: no children of its own */
    }
    if (!strcmp(mode, "orphan")) {
        pid_t p = fork();
        if (p < 0)
            return 1;
        if (p == 0) {
            pid_t q = fork();
            if (q != 0)
                _exit(q < 0);
            copy = true; /* the grandchild, orphaned once its parent has exited */
        } else if (waitpid(p, NULL, 0) != p) {
            return 1;
        }
    }
    if (!strcmp(mode, "pinned")) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        if (sched_setaffinity(0, sizeof one, &one) < 0)
            return 1;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    if (pipe(pipefd) < 0)
        return 1;
    pthread_mutex_lock(&lock);
    pthread_t tm, tr, ts, tv;
    if (pthread_create(&tm, NULL, stuck_in_mutex, NULL) || pthread_create(&tr, NULL, stuck_in_read, NULL))
        return 1;
    /* the vfork thread before the last one: with it, the spinning thread is the fifth listed */
    if (with_vfork && pthread_create(&tv, NULL, stuck_in_vfork, NULL))
        return 1;
    if (pthread_create(&ts, NULL, copy ? stuck_waiting : stuck_spinning, NULL))
        return 1;
    /* each thread its own name (/proc/PID/task/TID/comm), as the dump must show them */
    pthread_setname_np(tm, "in-mutex");
    pthread_setname_np(tr, "in-read");
    pthread_setname_np(ts, copy ? "waiting" : "spinning");
    if (with_vfork)
        pthread_setname_np(tv, "in-vfork");
    /* Wait (yielding) until each thread is where it stays. */
    while (!tid_mutex || !tid_read || !asleep(tid_mutex) || !asleep(tid_read) ||
           (copy ? !tid_wait : spins < 1000) ||
           (with_vfork && (!tid_vfork || !asleep_as(tid_vfork, 'D'))))
        sched_yield();
    tid_main_parked = my_tid(); /* the spinning or waiting thread announces once it sees us asleep */
    stuck_main_wait(tm);
    return 0;
}

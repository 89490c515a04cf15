/* helper — the small programs the integration tests run under resmon-run: they burn CPU, allocate,
 * fork trees with daemonizing orphans and setsid escapers, ignore TERM, stop themselves, write
 * huge lines, and announce each step as an event line ("ready PID", "daemon PID", ...) on the FIFO
 * named by $HELPER_EVENTS, so tests wait for events instead of sleeping. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void event(const char *fmt, ...)
{
    const char *path = getenv("HELPER_EVENTS");
    if (!path)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return;
    /* One write under PIPE_BUF: events from several processes never interleave. */
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
    close(fd);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void burn(double secs)
{
    double end = cpu_now() + secs;
    unsigned long x = 0;
    while (cpu_now() < end) {
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
        /* keep the loop from being optimised away */
        __asm__ volatile("" : : "r"(x));
    }
}

static int write_stdout(const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(1, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int sig_of(const char *name)
{
    static const struct {
        const char *n;
        int s;
    } t[] = {{"TERM", SIGTERM}, {"INT", SIGINT}, {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"PIPE", SIGPIPE},
             {"CHLD", SIGCHLD}, {"ALRM", SIGALRM}, {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"USR1", SIGUSR1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(name, t[i].n) == 0)
            return t[i].s;
    return atoi(name);
}

static void on_signal(int sig)
{
    event("signal %d", sig);
    _exit(0);
}

/* ---- probes of the seccomp filters: each prints one line "NAME: RESULT" on stdout ---------- */

static const char *err_name(int e)
{
    static char num[16];
    switch (e) {
    case 0: return "ok";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINVAL: return "EINVAL";
    default: snprintf(num, sizeof num, "errno%d", e); return num;
    }
}

/* Returns the exit status for a sandbox probe command, or -1 if cmd is none of them. */
static int sandbox_probe(const char *cmd, int argc, char **argv)
{
    if (!strcmp(cmd, "listen-tcp")) { /* listen-tcp SECS: accept on 127.0.0.1, announce the port */
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof sa;
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
            perror("listen-tcp");
            return 1;
        }
        alarm((unsigned)(argc > 2 ? atoi(argv[2]) : 60));
        event("listening %d", ntohs(sa.sin_port));
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c >= 0)
                close(c);
        }
    }
    if (!strcmp(cmd, "connect-tcp")) { /* connect-tcp PORT */
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            printf("connect-tcp: socket %s\n", err_name(errno));
            return 0;
        }
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
        printf("connect-tcp: connect %s\n", err_name(r < 0 ? errno : 0));
        close(fd);
        return 0;
    }
    if (!strcmp(cmd, "unix-socket")) { /* a socketpair and a socket, both AF_UNIX; a byte through */
        int sv[2];
        char c = 'x';
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
            printf("unix-socket: socketpair %s\n", err_name(errno));
            return 0;
        }
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            printf("unix-socket: socket %s\n", err_name(errno));
            return 0;
        }
        close(fd);
        if (write(sv[0], &c, 1) != 1 || read(sv[1], &c, 1) != 1 || c != 'x') {
            printf("unix-socket: transfer %s\n", err_name(errno));
            return 0;
        }
        printf("unix-socket: ok\n");
        return 0;
    }
    if (!strcmp(cmd, "ptrace-child")) { /* seize a child of ours; read our own memory as a debugger */
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        long r = ptrace(PTRACE_SEIZE, p, NULL, NULL);
        printf("ptrace-child: ptrace %s\n", err_name(r < 0 ? errno : 0));
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        char src[8] = "seccomp", dst[8] = "";
        struct iovec liov = {dst, sizeof dst}, riov = {src, sizeof src};
        ssize_t n = process_vm_readv(getpid(), &liov, 1, &riov, 1, 0);
        printf("ptrace-child: process_vm_readv %s\n", err_name(n < 0 ? errno : 0));
        return 0;
    }
    if (!strcmp(cmd, "unshare-user")) { /* unshare(CLONE_NEWUSER) in a child */
        pid_t p = fork();
        if (p == 0)
            _exit(unshare(CLONE_NEWUSER) < 0 ? errno : 0);
        int st;
        waitpid(p, &st, 0);
        printf("unshare-user: unshare %s\n", err_name(WIFEXITED(st) ? WEXITSTATUS(st) : -1));
        return 0;
    }
#if defined(__x86_64__)
    if (!strcmp(cmd, "int80")) { /* an i386 syscall (getpid): dies with SIGSEGV without ia32 support */
        long r, nr = 20;
        __asm__ volatile("int $0x80" : "=a"(r) : "0"(nr) : "memory");
        printf("int80: %s\n", r == (long)getpid() ? "ok" : "wrong");
        return 0;
    }
#endif
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: helper COMMAND [ARGS]\n");
        return 2;
    }
    const char *cmd = argv[1];
    double secs = argc > 2 ? atof(argv[2]) : 60;

    if (!strcmp(cmd, "sleep")) { /* sleep SECS */
        event("ready %d", getpid());
        sleep_s(secs);
        return 0;
    }
    if (!strcmp(cmd, "ignore-term")) { /* ignore-term SECS: a child that shrugs off TERM */
        signal(SIGTERM, SIG_IGN);
        event("ready %d", getpid());
        sleep_s(secs);
        return 0;
    }
    if (!strcmp(cmd, "on-signal")) { /* report the first TERM/INT/HUP/QUIT, then exit 0 */
        int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
        for (size_t i = 0; i < 4; i++)
            signal(sigs[i], on_signal);
        event("ready %d", getpid());
        sleep_s(secs);
        return 0;
    }
    if (!strcmp(cmd, "daemon")) { /* daemon SECS: double fork; the grandchild outlives us */
        int pfd[2];
        if (pipe(pfd) < 0)
            return 1;
        pid_t p = fork();
        if (p == 0) {
            if (fork() == 0) {
                close(pfd[0]);
                setsid();
                event("daemon %d", getpid());
                close(pfd[1]);
                sleep_s(secs);
                _exit(0);
            }
            _exit(0);
        }
        close(pfd[1]);
        waitpid(p, NULL, 0);
        char c;
        while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
            ;
        return 0;
    }
    if (!strcmp(cmd, "setsid-escape")) { /* a child in its own session, then exit */
        int pfd[2];
        if (pipe(pfd) < 0)
            return 1;
        pid_t p = fork();
        if (p == 0) {
            close(pfd[0]);
            setsid();
            event("escaper %d", getpid());
            close(pfd[1]);
            sleep_s(secs);
            _exit(0);
        }
        close(pfd[1]);
        char c;
        while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
            ;
        return 0;
    }
    if (!strcmp(cmd, "term-ignorer")) { /* a leftover that ignores TERM */
        int pfd[2];
        if (pipe(pfd) < 0)
            return 1;
        if (fork() == 0) {
            close(pfd[0]);
            signal(SIGTERM, SIG_IGN);
            event("ignorer %d", getpid());
            close(pfd[1]);
            sleep_s(secs);
            _exit(0);
        }
        close(pfd[1]);
        char c;
        while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
            ;
        return 0;
    }
    if (!strcmp(cmd, "stopped")) { /* a leftover that is stopped (SIGSTOP) */
        int pfd[2];
        if (pipe(pfd) < 0)
            return 1;
        pid_t p = fork();
        if (p == 0) {
            close(pfd[0]);
            event("stopped %d", getpid());
            close(pfd[1]);
            raise(SIGSTOP);
            sleep_s(secs);
            _exit(0);
        }
        close(pfd[1]);
        char c;
        while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
            ;
        /* Wait until it is really stopped. */
        int st;
        waitpid(p, &st, WUNTRACED);
        return 0;
    }
    if (!strcmp(cmd, "forkbomb")) { /* forkbomb CAP: keep forking until CAP processes were made */
        long cap = argc > 2 ? atol(argv[2]) : 200;
        long *made = mmap(NULL, sizeof *made, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (made == MAP_FAILED)
            return 1;
        *made = 1;
        pid_t top = getpid();
        for (;;) {
            long n = __atomic_add_fetch(made, 1, __ATOMIC_SEQ_CST);
            if (n > cap)
                break;
            pid_t p = fork();
            if (p < 0)
                break;
            if (p == 0)
                continue; /* the child forks on too */
        }
        if (getpid() == top)
            event("ready %d", getpid());
        /* Everyone stays alive and re-forks when a child dies (bounded by the cap). */
        for (;;) {
            pid_t p = wait(NULL);
            if (p < 0)
                pause();
        }
    }
    if (!strcmp(cmd, "burn")) { /* burn SECS of CPU */
        event("ready %d", getpid());
        burn(secs);
        return 0;
    }
    if (!strcmp(cmd, "alloc")) { /* alloc MB SECS: touch MB of memory, then hold it */
        size_t mb = (size_t)atol(argv[2]);
        char *p = malloc(mb << 20);
        if (!p)
            return 1;
        memset(p, 1, mb << 20);
        event("ready %d", getpid());
        sleep_s(argc > 3 ? atof(argv[3]) : 1);
        free(p);
        return 0;
    }
    if (!strcmp(cmd, "writefile")) { /* writefile BYTES PATH: storage writes */
        size_t n = (size_t)atol(argv[2]);
        int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return 1;
        char buf[65536];
        memset(buf, 'w', sizeof buf);
        while (n) {
            size_t k = n < sizeof buf ? n : sizeof buf;
            if (write(fd, buf, k) < 0)
                return 1;
            n -= k;
        }
        fsync(fd);
        close(fd);
        return 0;
    }
    if (!strcmp(cmd, "bytes")) { /* bytes N: every byte value, repeating */
        size_t n = (size_t)atol(argv[2]);
        char buf[65536];
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (char)(i * 7 + i / 256);
        while (n) {
            size_t k = n < sizeof buf ? n : sizeof buf;
            if (write_stdout(buf, k) < 0)
                return 1;
            n -= k;
        }
        return 0;
    }
    if (!strcmp(cmd, "textlines")) { /* textlines BYTES: plain text lines of varying length */
        size_t n = (size_t)atol(argv[2]);
        static char buf[1 << 16];
        size_t len = 0;
        for (unsigned i = 0; len + 200 < sizeof buf; i++)
            len += (size_t)snprintf(buf + len, sizeof buf - len,
                                    "%u INFO - something happened while running step %u of the job%.*s\n", i,
                                    i * 7, (int)(i % 40), "........................................");
        while (n) {
            size_t k = n < len ? n : len;
            if (write_stdout(buf, k) < 0)
                return 1;
            n -= k;
        }
        return 0;
    }
    if (!strcmp(cmd, "bigline")) { /* bigline N: N bytes, no newline */
        size_t n = (size_t)atol(argv[2]);
        char buf[65536];
        memset(buf, 'x', sizeof buf);
        while (n) {
            size_t k = n < sizeof buf ? n : sizeof buf;
            if (write_stdout(buf, k) < 0)
                return 1;
            n -= k;
        }
        return 0;
    }
    if (!strcmp(cmd, "print-hang")) { /* print a line, then go silent */
        printf("hello\n");
        fflush(stdout);
        event("ready %d", getpid());
        sleep_s(secs);
        return 0;
    }
    if (!strcmp(cmd, "tick")) { /* tick N INTERVAL: a line every INTERVAL seconds */
        int n = atoi(argv[2]);
        double iv = atof(argv[3]);
        for (int i = 0; i < n; i++) {
            printf("tick %d\n", i);
            fflush(stdout);
            sleep_s(iv);
        }
        return 0;
    }
    if (!strcmp(cmd, "sigdisp")) { /* sigdisp SIG: how the signal is set up for us */
        int s = sig_of(argv[2]);
        struct sigaction sa;
        sigaction(s, NULL, &sa);
        sigset_t m;
        sigprocmask(SIG_SETMASK, NULL, &m);
        printf("%s %s\n", sa.sa_handler == SIG_IGN ? "ignored" : sa.sa_handler == SIG_DFL ? "default" : "handled",
               sigismember(&m, s) ? "blocked" : "unblocked");
        return 0;
    }
    if (!strcmp(cmd, "exec-with")) { /* exec-with SIG ignore|block CMD...: set up a signal, exec */
        int s = sig_of(argv[2]);
        if (!strcmp(argv[3], "ignore"))
            signal(s, SIG_IGN);
        else {
            sigset_t m;
            sigemptyset(&m);
            sigaddset(&m, s);
            sigprocmask(SIG_BLOCK, &m, NULL);
        }
        execvp(argv[4], argv + 4);
        return 127;
    }
    if (!strcmp(cmd, "epipe")) { /* write to stdout until it fails; report how */
        signal(SIGPIPE, SIG_IGN);
        char buf[4096];
        memset(buf, 'e', sizeof buf);
        for (;;) {
            int r = write_stdout(buf, sizeof buf);
            if (r < 0) {
                event("write failed %s", r == -EPIPE ? "EPIPE" : strerror(-r));
                return 3;
            }
        }
    }
    if (!strcmp(cmd, "killself")) { /* killself SIG */
        signal(sig_of(argv[2]), SIG_DFL);
        kill(getpid(), sig_of(argv[2]));
        return 1;
    }
    if (!strcmp(cmd, "exit")) /* exit N */
        return atoi(argv[2]);
    if (!strcmp(cmd, "rss-of")) { /* rss-of CMD...: run CMD, print its peak RSS in KiB */
        pid_t p = fork();
        if (p == 0) {
            execvp(argv[2], argv + 2);
            _exit(127);
        }
        int st;
        struct rusage ru;
        wait4(p, &st, 0, &ru);
        fprintf(stderr, "maxrss %ld\n", ru.ru_maxrss);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    int probed = sandbox_probe(cmd, argc, argv);
    if (probed >= 0)
        return probed;
    fprintf(stderr, "helper: unknown command %s\n", cmd);
    return 2;
}

/* demo-suite — a small test suite that exercises everything resmon-run shows: it prints mozlog
 * raw JSON lines (the format Mozilla's harnesses write with --log-raw=-) on stdout for a handful of
 * tests that really cost something — CPU on two cores, 200 MiB of touched memory, 50 MiB written
 * to disk — one that fails unexpectedly, one whose child process segfaults, and a last one that
 * hangs forever, so that a timeout has something to name.
 *
 *   resmon-run --timeout 20 -- tests/demo/demo-suite
 *
 * Human-readable progress goes to stderr. Under resmon-run (RESMON_FD set) it also records its
 * phases through the marker descriptor. DEMO_SCALE (default 1) scales durations and sizes, so tests
 * can run it quickly. Every line is written with one write(2): nothing waits in a stdio buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double scale = 1.0;
static char tmpdir[4096];

static double epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000);
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_line(int fd, const char *line, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, line, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        line += n;
        len -= (size_t)n;
    }
}

/* One mozlog line: the common fields, then the action's own (a JSON fragment, may be empty). */
static void mozlog(const char *action, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mozlog(const char *action, const char *fmt, ...)
{
    char extra[2048], line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(extra, sizeof extra, fmt, ap);
    va_end(ap);
    int n = snprintf(line, sizeof line,
                     "{\"action\":\"%s\",\"time\":%.0f,\"thread\":\"MainThread\",\"pid\":%d,"
                     "\"source\":\"demo-suite\"%s%s}\n",
                     action, epoch_ms(), (int)getpid(), *extra ? "," : "", extra);
    if (n > 0)
        write_line(STDOUT_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "demo-suite: ");
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    write_line(STDERR_FILENO, line, (size_t)n);
}

/* A record for resmon-run's marker descriptor (one datagram each), when running under it. */
static void mark(const char *action, const char *name)
{
    const char *env = getenv("RESMON_FD");
    if (!env || !*env)
        return;
    char *end;
    long fd = strtol(env, &end, 10);
    if (*end || fd < 0 || fd > 65535)
        return;
    char rec[256];
    int n = snprintf(rec, sizeof rec, "{\"action\":\"%s\",\"name\":\"%s\",\"time\":%.6f}", action, name,
                     mono_s());
    if (n > 0 && (size_t)n < sizeof rec)
        send((int)fd, rec, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Where burn() puts its work, so the compiler cannot drop it. */
static volatile uint64_t burn_sink;

static void burn(double secs)
{
    double end = cpu_s() + secs;
    while (cpu_s() < end)
        for (int i = 0; i < 100000; i++)
            burn_sink += (uint64_t)i * 2654435761u;
}

static double test_t0;

static void test_start(const char *id)
{
    test_t0 = mono_s();
    mozlog("test_start", "\"test\":\"%s\"", id);
}

/* expected NULL: the result is what was expected (mozlog then omits "expected"). */
static void test_end(const char *id, const char *status, const char *expected, const char *message)
{
    char msg[512] = "";
    if (message)
        snprintf(msg, sizeof msg, ",\"message\":\"%s\"", message);
    char exp[64] = "";
    if (expected)
        snprintf(exp, sizeof exp, ",\"expected\":\"%s\"", expected);
    mozlog("test_end", "\"test\":\"%s\",\"status\":\"%s\"%s%s", id, status, exp, msg);
    say("%-22s %s%s%s (%.2f s)", id, status, expected ? ", expected " : "", expected ? expected : "",
        mono_s() - test_t0);
}

/* Two processes burn a second of CPU each at the same time: the tree, not just the command. */
static void test_cpu(void)
{
    const char *id = "demo/cpu-two-cores";
    test_start(id);
    double secs = 1.0 * scale;
    say("burning %.1f s of CPU in this process and in a child", secs);
    pid_t pid = fork();
    if (pid == 0) {
        burn(secs);
        _exit(0);
    }
    burn(secs);
    int st = 0;
    if (pid > 0)
        waitpid(pid, &st, 0);
    mozlog("test_status", "\"test\":\"%s\",\"subtest\":\"parent burned\",\"status\":\"PASS\"", id);
    mozlog("test_status", "\"test\":\"%s\",\"subtest\":\"child burned\",\"status\":\"%s\"%s", id,
           pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "PASS" : "FAIL",
           pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "" : ",\"expected\":\"PASS\"");
    test_end(id, "OK", NULL, NULL);
}

/* 200 MiB, every page written, held long enough for a few samples to see it. */
static void test_memory(void)
{
    const char *id = "demo/memory-200MiB";
    test_start(id);
    size_t size = (size_t)(200.0 * 1048576 * scale);
    mozlog("log", "\"level\":\"WARNING\",\"message\":\"allocating %zu MiB\"", size / 1048576);
    say("allocating and touching %zu MiB", size / 1048576);
    char *p = malloc(size);
    if (!p) {
        test_end(id, "ERROR", "PASS", "malloc failed");
        return;
    }
    long page = sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < size; i += (size_t)(page > 0 ? page : 4096))
        p[i] = (char)i;
    sleep_s(1.5 * scale < 0.05 ? 0.05 : 1.5 * scale);
    free(p);
    test_end(id, "PASS", NULL, NULL);
}

/* 50 MiB written and synced to a temporary directory, removed at once. */
static void test_files(void)
{
    const char *id = "demo/write-50MiB";
    test_start(id);
    size_t total = (size_t)(50.0 * 1048576 * scale);
    say("writing %zu MiB under %s", total / 1048576, tmpdir);
    char path[4200];
    snprintf(path, sizeof path, "%s/data", tmpdir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    static char chunk[1 << 20];
    memset(chunk, 'r', sizeof chunk);
    for (size_t done = 0; ok && done < total;) {
        size_t n = total - done < sizeof chunk ? total - done : sizeof chunk;
        ssize_t w = write(fd, chunk, n);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        done += w > 0 ? (size_t)w : 0;
    }
    if (fd >= 0) {
        ok = fsync(fd) == 0 && ok;
        close(fd);
    }
    unlink(path);
    test_end(id, ok ? "PASS" : "ERROR", ok ? NULL : "PASS", ok ? NULL : "write failed");
}

/* An assertion that does not hold: an unexpected FAIL. */
static void test_fail(void)
{
    const char *id = "demo/fails";
    test_start(id);
    sleep_s(0.2 * scale);
    mozlog("test_status",
           "\"test\":\"%s\",\"subtest\":\"2 + 2 == 5\",\"status\":\"FAIL\",\"expected\":\"PASS\","
           "\"message\":\"got 4, expected 5\"",
           id);
    mozlog("log", "\"level\":\"ERROR\",\"message\":\"%s: got 4, expected 5\"", id);
    test_end(id, "FAIL", "PASS", "1 subtest failed");
}

/* A child process dies of SIGSEGV; the suite reports the crash the way Mozilla's harnesses do. */
static void test_crash(void)
{
    const char *id = "demo/child-crashes";
    test_start(id);
    say("starting a child that dereferences a null pointer");
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {0, 0};
        setrlimit(RLIMIT_CORE, &rl); /* no core file in the caller's directory */
        signal(SIGSEGV, SIG_DFL);
        volatile int *volatile null = NULL;
        *null = 42;
        _exit(0);
    }
    int st = 0;
    if (pid > 0)
        waitpid(pid, &st, 0);
    if (pid > 0 && WIFSIGNALED(st)) {
        mozlog("crash",
               "\"test\":\"%s\",\"process\":%d,\"signature\":\"demo_null_write\","
               "\"reason\":\"SIGSEGV (signal %d) in child %d\",\"minidump_path\":null",
               id, (int)pid, WTERMSIG(st), (int)pid);
        test_end(id, "CRASH", "PASS", NULL);
    } else
        test_end(id, "ERROR", "PASS", "the child did not crash");
}

/* The test that never ends: what a timeout is for. */
static void test_hang(void)
{
    const char *id = "demo/hangs-forever";
    test_start(id);
    say("%-22s waiting for something that never happens", id);
    for (;;)
        pause();
}

int main(void)
{
    const char *s = getenv("DEMO_SCALE");
    if (s && *s) {
        scale = strtod(s, NULL);
        if (!(scale > 0 && scale <= 10))
            scale = 1.0;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/demo-suite.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    mark("phase-begin", "setup");
    if (!mkdtemp(tmpdir)) {
        say("cannot create a temporary directory: %s", strerror(errno));
        return 1;
    }
    mozlog("suite_start",
           "\"tests\":{\"default\":[\"demo/cpu-two-cores\",\"demo/memory-200MiB\",\"demo/write-50MiB\","
           "\"demo/fails\",\"demo/child-crashes\",\"demo/hangs-forever\"]},\"run_info\":{\"demo\":true}");
    mozlog("log", "\"level\":\"INFO\",\"message\":\"demo suite: 6 tests, the last one hangs\"");
    mark("phase-end", "setup");

    mark("phase-begin", "tests");
    test_cpu();
    test_memory();
    test_files();
    rmdir(tmpdir); /* empty now: nothing is left behind when the last test is killed */
    test_fail();
    test_crash();
    test_hang();
    /* not reached: the suite would end here */
    mark("phase-end", "tests");
    mozlog("suite_end", "%s", "");
    return 0;
}

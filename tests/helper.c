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

/* A leftover: a child that announces itself on the event FIFO ("NAME PID"), then sleeps
 * secs, as LO_* says (its own session, TERM ignored, stopped first). Returns once it has
 * announced itself (the pipe closes), with its pid. */
enum { LO_SETSID = 1, LO_IGNORE_TERM = 2, LO_STOP = 4 };
static pid_t leftover(const char *name, int how, double secs)
{
    int pfd[2];
    if (pipe(pfd) < 0)
        return -1;
    pid_t p = fork();
    if (p == 0) {
        close(pfd[0]);
        if (how & LO_SETSID)
            setsid();
        if (how & LO_IGNORE_TERM)
            signal(SIGTERM, SIG_IGN);
        event("%s %d", name, getpid());
        close(pfd[1]);
        if (how & LO_STOP)
            raise(SIGSTOP);
        sleep_s(secs);
        _exit(0);
    }
    close(pfd[1]);
    char c;
    while (read(pfd[0], &c, 1) < 0 && errno == EINTR)
        ;
    close(pfd[0]);
    return p;
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

/* ---- modes of the end-to-end profile tests (profile-run.sh, sampling-run.sh, testlog-run.sh) ---- */

static double it_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double it_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void it_write(int fd, const char *p, size_t len);

/* One line to fd, written at once (the supervisor sees it as soon as it is printed). */
static void it_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void it_line(int fd, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    it_write(fd, line, (size_t)n);
}

/* Part of a line (the rest comes later, as serial libtest prints a test's result). */
static void it_part(int fd, const char *s) { it_write(fd, s, strlen(s)); }

static void it_write(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

/* Append "ID WALL_MS CPU_MS" to $HELPER_COSTS: what a test really took, for the tests to compare
 * with the markers. */
static void it_cost(const char *id, double wall_ms, double cpu_ms)
{
    const char *path = getenv("HELPER_COSTS");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    it_line(fd, "%s %.3f %.3f", id, wall_ms, cpu_ms);
    close(fd);
}

/* Wait (bounded, 30 s) until the file at path contains needle. */
/* Wait (up to 30 s) until the file at path holds needle anywhere. */
static int it_wait_file_has(const char *path, const char *needle)
{
    size_t cap = 1 << 20, nl = strlen(needle);
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    for (int i = 0; i < 6000; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t len = 0;
        int found = 0;
        if (fd >= 0) {
            /* Chunk by chunk, keeping the needle's length minus one across chunks. */
            ssize_t n;
            while (!found && (n = read(fd, buf + len, cap - len)) > 0) {
                len += (size_t)n;
                found = memmem(buf, len, needle, nl) != NULL;
                if (len >= nl) {
                    memmove(buf, buf + len - (nl - 1), nl - 1);
                    len = nl - 1;
                }
            }
            close(fd);
        }
        if (found) {
            free(buf);
            return 0;
        }
        sleep_s(0.005);
    }
    free(buf);
    return -1;
}

static const char *it_signame(int sig)
{
    switch (sig) {
    case SIGTERM: return "TERM";
    case SIGINT: return "INT";
    case SIGHUP: return "HUP";
    case SIGQUIT: return "QUIT";
    default: return "OTHER";
    }
}

/* A mozlog line with the common fields; rest holds the action's own members (with a leading
 * comma). */
#define IT_MOZLOG(fd, action, rest, ...)                                                                    \
    it_line(fd, "{\"action\":\"%s\",\"time\":%.0f,\"thread\":\"MainThread\",\"pid\":%d,\"source\":\"itest\"" rest \
                "}",                                                                                         \
            action, it_wall_ms(), (int)getpid(), __VA_ARGS__)

/* The RFC 3339 time of now, for go test -json. */
static const char *it_rfc3339(char *buf, size_t n)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + k, n - k, ".%09ldZ", ts.tv_nsec);
    return buf;
}

/* Run one burning test between the lines start() and end() print, and report its cost. */
struct it_test {
    double wall0, cpu0;
};
static void it_begin(struct it_test *t)
{
    t->wall0 = it_mono_ms();
    t->cpu0 = cpu_now();
}
static void it_end(struct it_test *t, const char *id)
{
    it_cost(id, it_mono_ms() - t->wall0, (cpu_now() - t->cpu0) * 1e3);
}

/* suite FORM BURN [FD]: a small suite (a pass and an unexpected failure that each burn BURN
 * seconds of CPU, a skip, a crash) in the given form on FD (1: stdout, 2: stderr). Forms: mozlog,
 * tbpl, tap, gtest, go; and, with only the pass and the failure, tap-node (printed as Node does)
 * libtest (serial: a test's name and its result on one line, written at its start and end) and
 * go-sub (go test -v subtests, whose results come after their parent's). Test ids start with the form's name, so forms can be mixed in one run. */
static int it_suite(const char *form, double burn_s, int fd)
{
    struct it_test t;
    char ts[64];
    if (!strcmp(form, "mozlog")) {
        IT_MOZLOG(fd, "suite_start", ",\"tests\":{\"default\":[\"%s\"]}", "mozlog/test_pass.js");
        it_begin(&t);
        IT_MOZLOG(fd, "test_start", ",\"test\":\"%s\"", "mozlog/test_pass.js");
        burn(burn_s / 2);
        IT_MOZLOG(fd, "test_status", ",\"test\":\"%s\",\"subtest\":\"sub one\",\"status\":\"PASS\"", "mozlog/test_pass.js");
        burn(burn_s / 2);
        IT_MOZLOG(fd, "test_end", ",\"test\":\"%s\",\"status\":\"PASS\",\"expected\":\"PASS\"", "mozlog/test_pass.js");
        it_end(&t, "mozlog/test_pass.js");
        it_begin(&t);
        IT_MOZLOG(fd, "test_start", ",\"test\":\"%s\"", "mozlog/test_fail.js");
        burn(burn_s);
        IT_MOZLOG(fd, "test_end", ",\"test\":\"%s\",\"status\":\"FAIL\",\"expected\":\"PASS\",\"message\":\"1 != 2\"",
                  "mozlog/test_fail.js");
        it_end(&t, "mozlog/test_fail.js");
        IT_MOZLOG(fd, "test_start", ",\"test\":\"%s\"", "mozlog/test_skip.js");
        IT_MOZLOG(fd, "test_end", ",\"test\":\"%s\",\"status\":\"SKIP\",\"message\":\"disabled\"", "mozlog/test_skip.js");
        IT_MOZLOG(fd, "test_start", ",\"test\":\"%s\"", "mozlog/test_crash.js");
        IT_MOZLOG(fd, "crash",
                  ",\"test\":\"%s\",\"signature\":\"itest::Crash\",\"reason\":\"SIGSEGV\","
                  "\"minidump_path\":\"/tmp/minidumps/0123-abcd.dmp\"",
                  "mozlog/test_crash.js");
        IT_MOZLOG(fd, "test_end", ",\"test\":\"%s\",\"status\":\"CRASH\",\"expected\":\"PASS\"", "mozlog/test_crash.js");
        IT_MOZLOG(fd, "suite_end", "%s", "");
    } else if (!strcmp(form, "tbpl")) {
        it_line(fd, "SUITE-START | Running 4 tests");
        it_begin(&t);
        it_line(fd, "TEST-START | tbpl/test_pass.js");
        burn(burn_s / 2);
        it_line(fd, "TEST-PASS | tbpl/test_pass.js | sub one");
        burn(burn_s / 2);
        it_line(fd, "TEST-PASS | tbpl/test_pass.js | took %.0fms", it_mono_ms() - t.wall0);
        it_end(&t, "tbpl/test_pass.js");
        it_begin(&t);
        it_line(fd, "TEST-START | tbpl/test_fail.js");
        burn(burn_s);
        it_line(fd, "TEST-UNEXPECTED-FAIL | tbpl/test_fail.js | 1 != 2");
        it_line(fd, "TEST-INFO expected PASS | took %.0fms", it_mono_ms() - t.wall0);
        it_end(&t, "tbpl/test_fail.js");
        it_line(fd, "TEST-START | tbpl/test_skip.js");
        it_line(fd, "TEST-SKIP | tbpl/test_skip.js | took 0ms");
        it_line(fd, "TEST-START | tbpl/test_crash.js");
        it_line(fd, "PROCESS-CRASH | application crashed [@ itest::Crash] | tbpl/test_crash.js");
        it_line(fd, "TEST-UNEXPECTED-CRASH | tbpl/test_crash.js | expected PASS");
        it_line(fd, "TEST-INFO expected PASS | took 1ms");
        it_line(fd, "SUITE-END | took 1s");
    } else if (!strcmp(form, "tap")) {
        it_line(fd, "TAP version 13");
        it_begin(&t);
        it_line(fd, "1..4");
        burn(burn_s);
        it_line(fd, "ok 1 - tap pass");
        it_end(&t, "tap pass");
        it_begin(&t);
        burn(burn_s);
        it_line(fd, "not ok 2 - tap fail");
        it_end(&t, "tap fail");
        it_line(fd, "ok 3 - tap skip # SKIP disabled");
        it_line(fd, "not ok 4 - tap crash");
    } else if (!strcmp(form, "go-sub")) {
        /* go test -v with subtests: their results come after their parent's, once all ran. */
        static const char *const names[] = {"TestSub/pass", "TestSub/fail"};
        double ms[2];
        struct it_test all;
        it_begin(&all);
        it_line(fd, "=== RUN   TestSub");
        for (int i = 0; i < 2; i++) {
            it_begin(&t);
            it_line(fd, "=== RUN   %s", names[i]);
            burn(burn_s);
            ms[i] = it_mono_ms() - t.wall0;
            it_end(&t, names[i]);
        }
        it_line(fd, "--- FAIL: TestSub (%.2fs)", (it_mono_ms() - all.wall0) / 1e3);
        for (int i = 0; i < 2; i++)
            it_line(fd, "    --- %s: %s (%.2fs)", i ? "FAIL" : "PASS", names[i], ms[i] / 1e3);
        it_line(fd, "FAIL");
    } else if (!strcmp(form, "libtest")) {
        /* Serial libtest: the name when the test starts, the result on the same line at its end. */
        static const char *const names[] = {"it::pass", "it::fail"};
        it_line(fd, "running 2 tests");
        for (int i = 0; i < 2; i++) {
            char head[64];
            snprintf(head, sizeof head, "test %s ... ", names[i]);
            it_begin(&t);
            it_part(fd, head);
            burn(burn_s);
            it_line(fd, "%s", i ? "FAILED" : "ok");
            it_end(&t, names[i]);
        }
        it_line(fd, "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out");
    } else if (!strcmp(form, "tap-node")) {
        /* As Node's TAP reporter: a test is printed when it is done, opener included, with its
         * duration in a YAML block. */
        static const char *const names[] = {"node pass", "node fail"};
        it_line(fd, "TAP version 13");
        for (int i = 0; i < 2; i++) {
            it_begin(&t);
            burn(burn_s);
            double ms = it_mono_ms() - t.wall0;
            it_line(fd, "# Subtest: %s", names[i]);
            it_line(fd, "%s %d - %s", i ? "not ok" : "ok", i + 1, names[i]);
            it_line(fd, "  ---");
            it_line(fd, "  duration_ms: %.3f", ms);
            it_line(fd, "  ...");
            it_end(&t, names[i]);
        }
        it_line(fd, "1..2");
    } else if (!strcmp(form, "gtest")) {
        it_line(fd, "[==========] Running 4 tests from 1 test suite.");
        it_line(fd, "[----------] 4 tests from GTest");
        it_begin(&t);
        it_line(fd, "[ RUN      ] GTest.Pass");
        burn(burn_s);
        it_line(fd, "[       OK ] GTest.Pass (%.0f ms)", it_mono_ms() - t.wall0);
        it_end(&t, "GTest.Pass");
        it_begin(&t);
        it_line(fd, "[ RUN      ] GTest.Fail");
        burn(burn_s);
        it_line(fd, "itest.cc:12: Failure");
        it_line(fd, "[  FAILED  ] GTest.Fail (%.0f ms)", it_mono_ms() - t.wall0);
        it_end(&t, "GTest.Fail");
        it_line(fd, "[ RUN      ] GTest.Skip");
        it_line(fd, "itest.cc:20: Skipped");
        it_line(fd, "[  SKIPPED ] GTest.Skip (0 ms)");
        /* A crash: the test starts and nothing else is ever printed. */
        it_line(fd, "[ RUN      ] GTest.Crash");
    } else if (!strcmp(form, "go")) {
        const char *pkg = "example.com/itest";
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"start\",\"Package\":\"%s\"}", it_rfc3339(ts, sizeof ts), pkg);
        it_begin(&t);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"run\",\"Package\":\"%s\",\"Test\":\"TestPass\"}",
                it_rfc3339(ts, sizeof ts), pkg);
        burn(burn_s);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"pass\",\"Package\":\"%s\",\"Test\":\"TestPass\",\"Elapsed\":%.3f}",
                it_rfc3339(ts, sizeof ts), pkg, (it_mono_ms() - t.wall0) / 1e3);
        it_end(&t, "TestPass");
        it_begin(&t);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"run\",\"Package\":\"%s\",\"Test\":\"TestFail\"}",
                it_rfc3339(ts, sizeof ts), pkg);
        burn(burn_s);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"fail\",\"Package\":\"%s\",\"Test\":\"TestFail\",\"Elapsed\":%.3f}",
                it_rfc3339(ts, sizeof ts), pkg, (it_mono_ms() - t.wall0) / 1e3);
        it_end(&t, "TestFail");
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"run\",\"Package\":\"%s\",\"Test\":\"TestSkip\"}",
                it_rfc3339(ts, sizeof ts), pkg);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"skip\",\"Package\":\"%s\",\"Test\":\"TestSkip\",\"Elapsed\":0}",
                it_rfc3339(ts, sizeof ts), pkg);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"run\",\"Package\":\"%s\",\"Test\":\"TestCrash\"}",
                it_rfc3339(ts, sizeof ts), pkg);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"output\",\"Package\":\"%s\",\"Test\":\"TestCrash\",\"Output\":\"panic: boom\\n\"}",
                it_rfc3339(ts, sizeof ts), pkg);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"fail\",\"Package\":\"%s\",\"Test\":\"TestCrash\",\"Elapsed\":0}",
                it_rfc3339(ts, sizeof ts), pkg);
        it_line(fd, "{\"Time\":\"%s\",\"Action\":\"fail\",\"Package\":\"%s\",\"Elapsed\":1}", it_rfc3339(ts, sizeof ts),
                pkg);
    } else {
        fprintf(stderr, "helper: unknown form %s\n", form);
        return 2;
    }
    return 0;
}

static int itest_modes(int argc, char **argv)
{
    const char *cmd = argv[1];
    if (!strcmp(cmd, "suite") && argc > 3) /* suite FORM BURN [FD] */
        return it_suite(argv[2], atof(argv[3]), argc > 4 ? atoi(argv[4]) : 1);
    if (!strcmp(cmd, "interleave") && argc > 2) { /* interleave BURN: two mozlog tests open at once */
        double b = atof(argv[2]);
        struct it_test a, c;
        it_begin(&a);
        IT_MOZLOG(1, "test_start", ",\"test\":\"%s\"", "par/a.js");
        burn(b);
        it_begin(&c);
        IT_MOZLOG(1, "test_start", ",\"test\":\"%s\"", "par/b.js");
        burn(b);
        IT_MOZLOG(1, "test_end", ",\"test\":\"%s\",\"status\":\"PASS\"", "par/a.js");
        it_end(&a, "par/a.js");
        burn(b);
        IT_MOZLOG(1, "test_end", ",\"test\":\"%s\",\"status\":\"FAIL\",\"expected\":\"PASS\"", "par/b.js");
        it_end(&c, "par/b.js");
        return 0;
    }
    if (!strcmp(cmd, "steps") && argc > 3) { /* steps N BURN: N mozlog tests; "step K" after each
                                                line; then wait, so the run never ends before a
                                                test kills it */
        int n = atoi(argv[2]);
        double b = atof(argv[3]);
        int k = 0;
        for (int i = 0; i < n; i++) {
            char id[64];
            snprintf(id, sizeof id, "steps/test_%d.js", i);
            IT_MOZLOG(1, "test_start", ",\"test\":\"%s\"", id);
            event("step %d", ++k);
            burn(b);
            IT_MOZLOG(1, "test_end", ",\"test\":\"%s\",\"status\":\"PASS\"", id);
            event("step %d", ++k);
            burn(b / 4);
        }
        event("done");
        sleep_s(120);
        return 0;
    }
    if (!strcmp(cmd, "sigcheck") && argc > 2) {
        /* sigcheck PATH [SECS]: open a mozlog test, wait until the stream at PATH shows it, say
         * "ready PID"; at TERM/INT/HUP/QUIT look at PATH first and announce
         * "saw SIG full|stream|other WALL_NS" (a full profile starts with {"meta", a stream with
         * {"type":"meta"), then exit 0. */
        sigset_t set;
        sigemptyset(&set);
        int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
        for (size_t i = 0; i < 4; i++)
            sigaddset(&set, sigs[i]);
        sigprocmask(SIG_BLOCK, &set, NULL);
        IT_MOZLOG(1, "test_start", ",\"test\":\"%s\"", "stop/open-test.js");
        if (it_wait_file_has(argv[2], "stop/open-test.js") < 0) {
            event("sigcheck: the stream never showed the open test");
            return 1;
        }
        event("ready %d", getpid());
        double secs = argc > 3 ? atof(argv[3]) : 60;
        struct timespec to = {(time_t)secs, 0};
        /* EINTR: the dump at a stop traced this thread (signal(7): calls woken by a stop fail
         * so); the signal is still to come. */
        int sig;
        do
            sig = sigtimedwait(&set, NULL, &to);
        while (sig < 0 && errno == EINTR);
        if (sig < 0) {
            event("sigcheck: no signal");
            return 1;
        }
        char head[16] = "";
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, head, sizeof head - 1) : -1;
        if (fd >= 0)
            close(fd);
        head[n > 0 ? n : 0] = '\0';
        /* What a CI that kills the run now would keep: PATH.at-signal, for the tests to load. */
        if (getenv("HELPER_KEEP_AT_SIGNAL")) {
            char keep[4096];
            snprintf(keep, sizeof keep, "%s.at-signal", argv[2]);
            int in = open(argv[2], O_RDONLY | O_CLOEXEC), out = open(keep, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            char buf[65536];
            ssize_t k;
            while (in >= 0 && out >= 0 && (k = read(in, buf, sizeof buf)) > 0)
                if (write(out, buf, (size_t)k) != k)
                    break;
            if (in >= 0)
                close(in);
            if (out >= 0)
                close(out);
        }
        const char *kind = !strncmp(head, "{\"meta\"", 7)          ? "full"
                           : !strncmp(head, "{\"type\":\"meta\"", 14) ? "stream"
                                                                      : "other";
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        event("saw %s %s %lld", it_signame(sig), kind, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
        /* At once: a sanitizer's exit-time leak check would start a process of its own, which the
         * stop sequence (still signalling the tree) could hit. */
        _exit(0);
    }
    if (!strcmp(cmd, "wait-file") && argc > 3) { /* wait-file PATH TEXT: "found PID" once PATH holds TEXT */
        if (it_wait_file_has(argv[2], argv[3]) < 0)
            return 1;
        event("found %d", getpid());
        return 0;
    }
    if (!strcmp(cmd, "garbage-marks")) { /* datagrams of garbage to $RESMON_FD */
        const char *v = getenv("RESMON_FD");
        if (!v)
            return 1;
        int fd = atoi(v);
        static char big[70000];
        memset(big, '{', sizeof big);
        const char *bad[] = {"", "not json", "{\"action\":\"end\",\"name\":\"never begun\"}",
                             "{\"action\":\"event\"}", "{\"action\":42,\"name\":\"x\"}", "[1,2,3]",
                             "{\"action\":\"event\",\"name\":\"\\ud800\"", "\xff\xfe\x00\x01garbage"};
        for (int round = 0; round < 20; round++) {
            for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                if (write(fd, bad[i], strlen(bad[i]) + (i == 7 ? 4 : 0)) < 0 && errno != EAGAIN)
                    return 1;
            unsigned char rnd[512];
            for (size_t i = 0; i < sizeof rnd; i++)
                rnd[i] = (unsigned char)(i * 131 + (unsigned)round * 17);
            if (write(fd, rnd, sizeof rnd) < 0)
                return 1;
        }
        /* over the record limit: refused by the socket (EMSGSIZE) or dropped by the reader */
        if (write(fd, big, sizeof big) < 0 && errno != EMSGSIZE)
            return 1;
        return 0;
    }
    if (!strcmp(cmd, "rusage-wrap") && argc > 2) {
        /* rusage-wrap CMD...: run CMD, and print on stderr "children-cpu-ns N": the CPU time of
         * every descendant CMD waited for (its RUSAGE_CHILDREN), taken as wait4's total minus
         * CMD's own time, read from its zombie's /proc/PID/schedstat before reaping it. */
        pid_t p = fork();
        if (p < 0)
            return 125;
        if (p == 0) {
            execvp(argv[2], argv + 2);
            _exit(127);
        }
        siginfo_t si;
        while (waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
            ;
        char path[64], buf[256] = "";
        snprintf(path, sizeof path, "/proc/%d/schedstat", (int)p);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        buf[n > 0 ? n : 0] = '\0';
        int st;
        struct rusage ru;
        while (wait4(p, &st, 0, &ru) < 0 && errno == EINTR)
            ;
        long long total = ((long long)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
                          ((long long)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
        if (n > 0)
            fprintf(stderr, "children-cpu-ns %lld\n", total - strtoll(buf, NULL, 10));
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return -1;
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
    if (!strcmp(cmd, "with-tcp-fd") && argc > 3) { /* with-tcp-fd PORT CMD...: exec CMD with a TCP
                                                      connection to 127.0.0.1:PORT on fd 3 */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || dup2(fd, 3) < 0) {
            perror("with-tcp-fd");
            return 1;
        }
        execvp(argv[3], argv + 3);
        perror("with-tcp-fd: exec");
        return 127;
    }
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
    int it = itest_modes(argc, argv);
    if (it >= 0)
        return it;

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
    if (!strcmp(cmd, "all-signals")) { /* report every catchable signal but CHLD, exit 0 at the first */
        for (int sig = 1; sig <= SIGRTMAX; sig++)
            if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && sig != SIGCONT && sig != SIGWINCH &&
                sig != SIGURG && (sig < 32 || sig >= SIGRTMIN))
                signal(sig, on_signal);
        event("ready %d", getpid());
        sleep_s(secs);
        return 0;
    }
    if (!strcmp(cmd, "slow-term")) { /* slow-term MS: at TERM, "term", MS of cleaning up, "cleaned up" */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, NULL);
        event("ready %d", getpid());
        int sig;
        sigwait(&set, &sig);
        event("term");
        sleep_s(atof(argv[2]) / 1000);
        event("cleaned up");
        return 0;
    }
    if (!strcmp(cmd, "escape-cgroup")) { /* escape-cgroup SECS: move to the parent cgroup, leave an
                                           orphan in its own session there, exit */
        char cg[4096];
        int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, cg, sizeof cg - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            return 2;
        cg[n] = '\0';
        char *line = strncmp(cg, "0::", 3) == 0 ? cg : strstr(cg, "\n0::");
        if (!line)
            return 2;
        if (line != cg)
            line++;
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *slash = strrchr(line + 3, '/');
        if (!slash)
            return 2;
        *slash = '\0';
        /* the cgroup2 mount: this machine's or the usual place */
        const char *mnt = access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0 ? "/sys/fs/cgroup/unified"
                                                                                   : "/sys/fs/cgroup";
        char path[8192];
        snprintf(path, sizeof path, "%s%s/cgroup.procs", mnt, line + 3);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1) {
            event("cannot escape %s", path);
            return 2;
        }
        close(fd);
        return leftover("escaped", LO_SETSID, secs) < 0;
    }
    if (!strcmp(cmd, "daemon")) { /* daemon SECS: double fork; the grandchild outlives us */
        pid_t p = fork();
        if (p == 0)
            _exit(leftover("daemon", LO_SETSID, secs) < 0);
        int st;
        return p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st);
    }
    if (!strcmp(cmd, "setsid-escape")) { /* a child in its own session, then exit */
        return leftover("escaper", LO_SETSID, secs) < 0;
    }
    if (!strcmp(cmd, "term-ignorer")) { /* a leftover that ignores TERM */
        return leftover("ignorer", LO_IGNORE_TERM, secs) < 0;
    }
    if (!strcmp(cmd, "escaped-ignorer")) { /* "command PID", then a leftover out of our group */
        event("command %d", getpid());
        return leftover("escaped-ignorer", LO_SETSID | LO_IGNORE_TERM, secs) < 0;
    }
    if (!strcmp(cmd, "stopped")) { /* a leftover that is stopped (SIGSTOP) */
        pid_t p = leftover("stopped", LO_STOP, secs);
        if (p < 0)
            return 1;
        /* Wait until it is really stopped. */
        int st;
        waitpid(p, &st, WUNTRACED);
        return 0;
    }
    if (!strcmp(cmd, "forkbomb")) { /* forkbomb CAP: keep forking until CAP processes were made */
        long cap = argc > 2 ? atol(argv[2]) : 200;
        if (getenv("FORKBOMB_IGNORE_TERM")) /* only KILL stops it */
            signal(SIGTERM, SIG_IGN);
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
        /* the compiler may drop a store to memory nobody reads before free(): keep it */
        __asm__ volatile("" : : "r"(p) : "memory");
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

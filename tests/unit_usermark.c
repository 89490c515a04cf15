/* Unit tests of records from the command: the record format, the socket transport and the
 * client used by `resmon-run --mark`. */
#include "testlog_capture.h"
#include "check_run.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profile/usermark.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct usermark *um_make(struct cap *c, uint64_t t0, bool probe)
{
    struct usermark_config cfg = {t0, 4};
    struct usermark_probe pr = {fake_cpu, NULL};
    struct usermark *um;
    fake_cpu_ns = 0;
    ck_assert_int_eq(usermark_new(&cfg, cap_sink(c), probe ? &pr : NULL, &um), 0);
    return um;
}

static int rec(struct usermark *um, const char *s, double ms)
{
    return usermark_record(um, s, strlen(s), MS(ms));
}

START_TEST(test_records)
{
    struct cap c = {0};
    struct usermark *um = um_make(&c, T0, true);
    ck_assert_int_eq(rec(um, "{\"action\":\"event\",\"name\":\"simple_event\"}", 5), 0);
    ck_assert_str_eq(c.lines[0], "M simple_event 5.000 - 0 {\"type\":\"Text\",\"text\":\"simple_event\"}");
    ck_assert_int_eq(rec(um, "{\"action\":\"event\",\"name\":\"e\",\"text\":\"with text\"}", 6), 0);
    ck_assert_str_eq(c.lines[1], "M e 6.000 - 0 {\"type\":\"Text\",\"text\":\"with text\"}");
    /* interval given with monotonic seconds */
    ck_assert_int_eq(rec(um, "{\"action\":\"marker\",\"name\":\"command\",\"start\":1000.01,\"end\":1000.02,"
                             "\"text\":\"a plain string payload\"}", 30), 0);
    ck_assert_str_eq(c.lines[2], "M command 10.000 20.000 2 {\"type\":\"Text\",\"text\":\"a plain string payload\"}");
    /* begin/end, timed by arrival */
    ck_assert_int_eq(rec(um, "{\"action\":\"begin\",\"name\":\"download\"}", 40), 0);
    ck_assert_str_eq(c.lines[3], "S {\"type\":\"open\",\"kind\":\"marker\",\"key\":\"download\",\"name\":\"download\","
                                 "\"startTime\":40.0,\"category\":2,\"data\":{\"type\":\"Text\",\"text\":\"download\"}}");
    ck_assert_int_eq(rec(um, "{\"action\":\"end\",\"name\":\"download\"}", 50), 0);
    ck_assert_str_eq(c.lines[4], "M download 40.000 50.000 2 {\"type\":\"Text\",\"text\":\"download\"}");
    ck_assert_str_eq(c.lines[5], "S {\"type\":\"close\",\"kind\":\"marker\",\"key\":\"download\"}");
    /* phases carry the tree's CPU (10 ms of CPU per probe call) over 4 CPUs */
    ck_assert_int_eq(rec(um, "{\"action\":\"phase-begin\",\"name\":\"run-tests\"}", 100), 0);
    ck_assert_int_eq(rec(um, "{\"action\":\"phase-end\",\"name\":\"run-tests\"}", 110), 0);
    ck_assert_str_eq(c.lines[7], "M Phase 100.000 110.000 1 {\"type\":\"Phase\",\"phase\":\"run-tests\","
                                 "\"cpuTime\":10.0,\"cpuPercent\":\"25.0%\"}");
    /* a time outside [t0, now] is replaced by the arrival; unknown members are ignored */
    ck_assert_int_eq(rec(um, "{\"action\":\"event\",\"name\":\"late\",\"time\":99999999,\"x\":[1]}", 120), 0);
    ck_assert_int_eq(rec(um, "{\"action\":\"event\",\"name\":\"early\",\"time\":1000.1}", 120), 0);
    ck_assert_int_ge(cap_find(&c, "M late 120.000 - 0"), 0);
    ck_assert_int_ge(cap_find(&c, "M early 100.000 - 0"), 0);

    /* malformed */
    const char *bad[] = {
        "", "not json", "[1]", "{\"action\":\"event\"}", "{\"action\":\"event\",\"name\":\"\"}",
        "{\"action\":\"event\",\"name\":7}", "{\"action\":\"nope\",\"name\":\"x\"}",
        "{\"action\":\"end\",\"name\":\"never-begun\"}", "{\"action\":\"phase-end\",\"name\":\"download\"}",
        "{\"action\":\"marker\",\"name\":\"m\"}", "{\"action\":\"event\",\"name\":\"x\",\"text\":3}",
        "{\"action\":\"event\",\"name\":\"x\"", "{\"action\":\"event\",\"name\":\"x\"}garbage",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(rec(um, bad[i], 130) == -EINVAL, "%s", bad[i]);
    char longname[USERMARK_MAX_NAME + 64];
    snprintf(longname, sizeof longname, "{\"action\":\"event\",\"name\":\"%0*d\"}", USERMARK_MAX_NAME + 1, 0);
    ck_assert_int_eq(rec(um, longname, 130), -EINVAL);
    ck_assert_int_eq(usermark_record(um, longname, USERMARK_MAX_RECORD + 1, MS(130)), -EMSGSIZE);
    struct usermark_stats st;
    usermark_get_stats(um, &st);
    ck_assert_uint_eq(st.records, 9);
    ck_assert_uint_eq(st.malformed, 14);
    ck_assert_uint_eq(st.oversized, 1);

    /* still open at the end */
    ck_assert_int_eq(rec(um, "{\"action\":\"phase-begin\",\"name\":\"p\"}", 200), 0);
    ck_assert_int_eq(rec(um, "{\"action\":\"begin\",\"name\":\"b\",\"text\":\"t\"}", 210), 0);
    size_t before = c.n;
    usermark_finish(um, MS(300));
    ck_assert_int_ge(cap_find(&c, "M b 210.000 300.000 2 {\"type\":\"Text\",\"text\":\"t\"}"), (ssize_t)before);
    ck_assert_int_ge(cap_find(&c, "M Phase 200.000 300.000 1 {\"type\":\"Phase\",\"phase\":\"p\""), (ssize_t)before);
    usermark_free(um);
    usermark_free(NULL);
    cap_free(&c);
}
END_TEST

START_TEST(test_open_bounded)
{
    struct cap c = {0};
    struct usermark *um = um_make(&c, T0, false);
    char r[128];
    for (int i = 0; i < USERMARK_MAX_OPEN + 10; i++) {
        snprintf(r, sizeof r, "{\"action\":\"begin\",\"name\":\"m%d\"}", i);
        rec(um, r, 1);
    }
    struct usermark_stats st;
    usermark_get_stats(um, &st);
    ck_assert_uint_eq(st.overflow, 10);
    usermark_free(um); /* frees what is open */
    cap_free(&c);
}
END_TEST

/* usermark_send takes main()'s argv; build a writable copy of the words (NULL ends). */
static int snd(int argc, const char *a, const char *b, const char *c)
{
    char w[3][128] = {{0}};
    char *argv[3] = {w[0], w[1], w[2]};
    const char *in[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (in[i])
            snprintf(w[i], sizeof w[i], "%s", in[i]);
    return usermark_send(argc, argv);
}

static void set_env_fd(int fd)
{
    char v[16];
    snprintf(v, sizeof v, "%d", fd);
    setenv(USERMARK_ENV, v, 1);
}

START_TEST(test_socket_and_client)
{
    struct cap c = {0};
    uint64_t t0 = mono_ns();
    struct usermark *um = um_make(&c, t0, false);
    int wfd = usermark_fd_for_child(um);
    ck_assert_int_ge(wfd, 0);
    ck_assert_int_ge(usermark_read_fd(um), 0);
    set_env_fd(wfd);

    ck_assert_int_eq(snd(3, "event", "hello", "some text"), 0);
    ck_assert_int_eq(snd(2, "begin", "step", NULL), 0);
    ck_assert_int_eq(snd(2, "end", "step", NULL), 0);
    ck_assert_int_eq(snd(2, "phase-begin", "build", NULL), 0);
    ck_assert_int_eq(snd(2, "phase-end", "build", NULL), 0);
    /* garbage and an oversized datagram from a misbehaving writer */
    ck_assert_int_eq(send(wfd, "garbage{", 8, 0), 8);
    static char big[USERMARK_MAX_RECORD + 100];
    memset(big, ' ', sizeof big);
    int sz = (int)sizeof big * 2;
    setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    ck_assert_int_eq(send(wfd, big, sizeof big, 0), (ssize_t)sizeof big);
    ck_assert_int_eq(snd(3, "event", "hello", "some text"), 0);

    ck_assert_int_eq(usermark_drain(um, mono_ns()), 8);
    ck_assert_int_eq(usermark_drain(um, mono_ns()), 0);
    struct usermark_stats st;
    usermark_get_stats(um, &st);
    ck_assert_uint_eq(st.records, 6);
    ck_assert_uint_eq(st.malformed, 1);
    ck_assert_uint_eq(st.oversized, 1);
    ck_assert_uint_eq(cap_count(&c, "M hello "), 2);
    ck_assert_int_ge(cap_find(&c, "{\"type\":\"Text\",\"text\":\"some text\"}"), 0);
    ck_assert_int_ge(cap_find(&c, "M step "), 0);
    ck_assert_int_ge(cap_find(&c, "M Phase "), 0);

    /* misuse */
    ck_assert_int_eq(snd(1, "event", NULL, NULL), -EINVAL);
    ck_assert_int_eq(snd(3, "end", "x", "extra"), -EINVAL);
    ck_assert_int_eq(snd(2, "frobnicate", "x", NULL), -EINVAL);
    ck_assert_int_eq(snd(2, "event", "", NULL), -EINVAL);
    ck_assert_int_eq(snd(0, "event", NULL, NULL), -EINVAL);
    unsetenv(USERMARK_ENV);
    ck_assert_int_eq(snd(3, "event", "hello", "some text"), -EBADF);
    setenv(USERMARK_ENV, "12x", 1);
    ck_assert_int_eq(snd(3, "event", "hello", "some text"), -EBADF);
    set_env_fd(0); /* not a socket */
    ck_assert_int_lt(snd(3, "event", "hello", "some text"), 0);

    usermark_close_child_fd(um);
    ck_assert_int_eq(usermark_fd_for_child(um), -1);
    usermark_free(um);
    cap_free(&c);
}
END_TEST

START_TEST(test_concurrent_writers)
{
    struct cap c = {0};
    struct usermark *um = um_make(&c, mono_ns(), false);
    set_env_fd(usermark_fd_for_child(um));
    enum { KIDS = 4, EACH = 50 };
    pid_t kids[KIDS];
    for (int k = 0; k < KIDS; k++) {
        kids[k] = fork();
        ck_assert_int_ge(kids[k], 0);
        if (kids[k] == 0) {
            char name[32];
            int rc = 0;
            for (int i = 0; i < EACH && rc == 0; i++) {
                snprintf(name, sizeof name, "k%d-%d", k, i);
                if (snd(2, "event", name, NULL) < 0)
                    rc = 1;
                if (k == 0 && i == 10) /* a writer that dies mid-way harms nobody */
                    break;
            }
            usermark_free(um); /* only so leak checkers stay quiet in the child */
            cap_free(&c);
            _exit(rc);
        }
    }
    int got = 0, expect = (KIDS - 1) * EACH + 11;
    while (got < expect) {
        struct pollfd p = {usermark_read_fd(um), POLLIN, 0};
        ck_assert_int_eq(poll(&p, 1, 10000), 1);
        int r = usermark_drain(um, mono_ns());
        ck_assert_int_ge(r, 0);
        got += r;
    }
    for (int k = 0; k < KIDS; k++) {
        int ws;
        ck_assert_int_eq(waitpid(kids[k], &ws, 0), kids[k]);
        ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    struct usermark_stats st;
    usermark_get_stats(um, &st);
    ck_assert_uint_eq(st.records, (uint64_t)expect);
    ck_assert_uint_eq(st.malformed, 0);
    usermark_free(um);
    cap_free(&c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("usermark");
    TCase *tc = tcase_create("usermark");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_records);
    tcase_add_test(tc, test_open_bounded);
    tcase_add_test(tc, test_socket_and_client);
    tcase_add_test(tc, test_concurrent_writers);
    suite_add_tcase(s, tc);
    return check_run(s);
}

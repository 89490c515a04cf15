/* Unit tests of the pass-through of one output stream.
 *
 * Linked with -Wl,--wrap=write: every write the module makes is seen here first, with the clock
 * read at that moment, so the order "arrival time, then the bytes go on" is checked exactly. */
#include "run/passthru.h"

#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);

static uint64_t first_write_ns; /* the clock at the first write since reset */
static int writes;

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (!writes++)
        first_write_ns = now_ns();
    return __real_write(fd, buf, n);
}

static void pipe_of(int p[2])
{
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
}

/* The chunk's arrival time is taken before its bytes are written on: a reader downstream that
 * acts on them (starts a process) can never look earlier than the line that made it act. */
START_TEST(test_arrival_before_write)
{
    int in[2], out[2];
    pipe_of(in);
    pipe_of(out);
    struct passthru *p;
    ck_assert_int_eq(passthru_new(in[0], out[1], &p), 0);
    ck_assert_int_eq(__real_write(in[1], "line\n", 5), 5);
    writes = 0;
    uint64_t before = now_ns(), at = 0;
    const char *buf;
    size_t n;
    ck_assert_int_eq(passthru_read(p, &buf, &n, &at), PT_DATA);
    ck_assert_uint_eq(n, 5);
    ck_assert_mem_eq(buf, "line\n", 5);
    ck_assert_int_eq(writes, 1);
    ck_assert_uint_le(before, at);
    ck_assert_uint_le(at, first_write_ns);
    char got[8];
    ck_assert_int_eq(read(out[0], got, sizeof got), 5);
    ck_assert_mem_eq(got, "line\n", 5);
    passthru_free(p);
    close(in[1]);
    close(out[0]);
    close(out[1]);
}
END_TEST

/* Empty now, then the bytes, then end of file once every writer is gone; the arrival time is
 * left alone when nothing came. */
START_TEST(test_empty_data_eof)
{
    int in[2], out[2];
    pipe_of(in);
    pipe_of(out);
    struct passthru *p;
    ck_assert_int_eq(passthru_new(in[0], out[1], &p), 0);
    const char *buf;
    size_t n;
    uint64_t at = 7;
    ck_assert_int_eq(passthru_read(p, &buf, &n, &at), PT_EMPTY);
    ck_assert_uint_eq(at, 7);
    ck_assert_int_eq(__real_write(in[1], "a\0b", 3), 3); /* bytes, not text */
    ck_assert_int_eq(passthru_read(p, &buf, &n, &at), PT_DATA);
    ck_assert_uint_eq(n, 3);
    ck_assert(!passthru_pending(p));
    close(in[1]);
    at = 7;
    ck_assert_int_eq(passthru_read(p, &buf, &n, &at), PT_EOF);
    ck_assert_uint_eq(at, 7);
    ck_assert(passthru_closed(p));
    ck_assert(!passthru_downstream_gone(p));
    char got[8];
    ck_assert_int_eq(read(out[0], got, sizeof got), 3);
    ck_assert_mem_eq(got, "a\0b", 3);
    passthru_free(p);
    close(out[0]);
    close(out[1]);
}
END_TEST

/* A full downstream pipe: the chunk stays pending (nothing more is read), and goes on whole once
 * there is room; a reader gone makes the module close the command's pipe. */
START_TEST(test_pending_then_gone)
{
    int in[2], out[2];
    pipe_of(in);
    pipe_of(out);
    ck_assert_int_ge(fcntl(out[1], F_SETPIPE_SZ, 4096), 4096);
    int cap = fcntl(out[1], F_GETPIPE_SZ);
    static char big[65536];
    memset(big, 'x', sizeof big);
    ck_assert_int_gt((int)sizeof big, cap);
    struct passthru *p;
    ck_assert_int_eq(passthru_new(in[0], out[1], &p), 0);
    ck_assert_int_eq(__real_write(in[1], big, sizeof big), (ssize_t)sizeof big);
    const char *buf;
    size_t n;
    uint64_t at;
    ck_assert_int_eq(passthru_read(p, &buf, &n, &at), PT_DATA);
    ck_assert_uint_eq(n, sizeof big);
    ck_assert(passthru_pending(p));
    ck_assert_int_eq(passthru_read(p, &buf, &n, &at), PT_EMPTY); /* nothing read past the pending */
    struct pollfd pfd[2];
    ck_assert_int_eq(passthru_events(p, pfd), 1);
    ck_assert_int_eq(pfd[0].events, POLLOUT);
    size_t total = 0;
    static char got[sizeof big];
    while (total < sizeof big) {
        ssize_t r = read(out[0], got + total, sizeof got - total);
        ck_assert_int_gt(r, 0);
        total += (size_t)r;
        passthru_flush(p);
    }
    ck_assert(!passthru_pending(p));
    ck_assert_mem_eq(got, big, sizeof big);

    /* the reader goes away */
    close(out[0]);
    signal(SIGPIPE, SIG_IGN);
    ck_assert_int_eq(__real_write(in[1], "z", 1), 1);
    ck_assert_int_eq(passthru_read(p, &buf, &n, &at), PT_DATA);
    ck_assert(passthru_downstream_gone(p));
    ck_assert(passthru_closed(p));
    errno = 0;
    ck_assert_int_eq(__real_write(in[1], "z", 1), -1); /* the command sees EPIPE at its next write */
    ck_assert_int_eq(errno, EPIPE);
    passthru_free(p);
    close(in[1]);
    close(out[1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("passthru");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_arrival_before_write);
    tcase_add_test(tc, test_empty_data_eof);
    tcase_add_test(tc, test_pending_then_gone);
    suite_add_tcase(s, tc);
    return check_run(s);
}

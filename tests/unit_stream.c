/* Unit tests of the stream writer and the marker schemas: header lines, marker line format,
 * state lines, file creation rules, write errors. */
#include "profile/stream.h"

#include <check.h>
#include "check_run.h"
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "profile/markertypes.h"

#define T0 UINT64_C(5000000000)
#define MS(x) (T0 + (uint64_t)((x) * 1e6))

static char dir[] = "/tmp/unit_stream.XXXXXX";

static void setup(void) { ck_assert_ptr_nonnull(mkdtemp(dir)); }
static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
    strcpy(dir, "/tmp/unit_stream.XXXXXX");
}

static struct stream_meta meta_default(void)
{
    struct stream_meta m = {.product = "xpcshell", .interval_ms = 100.0, .start_wall_ms = 1796212070184.8484,
                            .t0_ns = T0, .logical_cpus = 2, .physical_cpus = 2, .main_memory = 25275953152ULL};
    return m;
}

static char *slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (ret_len)
        *ret_len = n;
    return buf;
}

/* Line k (0-based) of text, copied. */
static char *line_at(const char *text, int k)
{
    const char *p = text;
    for (int i = 0; i < k; i++) {
        p = strchr(p, '\n');
        ck_assert_ptr_nonnull(p);
        p++;
    }
    const char *e = strchr(p, '\n');
    ck_assert_ptr_nonnull(e);
    return strndup(p, (size_t)(e - p));
}

static struct stream *open_in_dir(const char *name, struct stream_meta *m, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", dir, name);
    struct stream *s = NULL;
    ck_assert_int_eq(stream_open(AT_FDCWD, path, m, 0, &s), 0);
    return s;
}

START_TEST(test_header_lines)
{
    char path[256];
    const char *keys[] = {"device", "sourceURL", "product"};
    const char *vals[] = {"box", "https://hg.example/rev/abc", "renamed"};
    struct stream_meta m = meta_default();
    m.extra_keys = keys;
    m.extra_values = vals;
    m.n_extra = 3;
    m.max_markers = 1234;
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    ck_assert_uint_eq(stream_lines(s), 3);
    stream_close(s);
    char *text = slurp(path, NULL);
    ck_assert(strncmp(text, "{\"type\":\"meta\",\"processType\":0,", 31) == 0);
    char *l0 = line_at(text, 0), *l1 = line_at(text, 1), *l2 = line_at(text, 2);
    cJSON *meta = cJSON_Parse(l0);
    ck_assert_ptr_nonnull(meta);
    static const char *const order[] = {"type", "processType", "product", "stackwalk", "version",
                                        "preprocessedProfileVersion", "symbolicationNotSupported", "interval",
                                        "startTime", "profilingStartTime", "logicalCPUs", "physicalCPUs",
                                        "mainMemory", "categories", "markerSchema", "usesOnlyOneStackType",
                                        "maxMarkers", "device", "sourceURL"};
    int k = 0;
    for (cJSON *c = meta->child; c; c = c->next, k++) {
        ck_assert_int_lt(k, (int)ARRAY_SIZE(order));
        ck_assert_str_eq(c->string, order[k]);
    }
    ck_assert_int_eq(k, (int)ARRAY_SIZE(order));
    ck_assert_str_eq(cJSON_GetObjectItem(meta, "product")->valuestring, "renamed");
    ck_assert(strstr(l0, "\"interval\":100.0,") != NULL);
    ck_assert(strstr(l0, "\"mainMemory\":25275953152,") != NULL);
    ck_assert(strstr(l0, "\"maxMarkers\":1234,") != NULL);
    ck_assert(strstr(l0, "\"startTime\":1796212070184.8484,") != NULL);
    cJSON_Delete(meta);
    static const char th_prefix[] = "{\"type\":\"thread\",\"processType\":\"default\",\"processName\":\"renamed\","
                                    "\"processStartupTime\":0,";
    ck_assert(strncmp(l1, th_prefix, sizeof th_prefix - 1) == 0);
    cJSON *th = cJSON_Parse(l1);
    ck_assert_ptr_nonnull(th);
    ck_assert_str_eq(cJSON_GetObjectItem(th, "pid")->valuestring, "0");
    ck_assert_ptr_null(cJSON_GetObjectItem(th, "markers"));
    cJSON_Delete(th);
    ck_assert_str_eq(l2, "{\"type\":\"clock\",\"monotonicNs\":5000000000}");
    free(l0);
    free(l1);
    free(l2);
}
END_TEST

START_TEST(test_marker_lines)
{
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    const struct marker_sink *k = stream_sink(s);
    const char cpu[] = "{\"type\":\"CPU\",\"cpuPercent\":\"54.5%\"}";
    marker_emit(k, "CPU Use", MS(35.723), MS(139.297), 0, cpu, strlen(cpu));
    marker_emit(k, "Sampling Interval", MS(139.297), MARKER_INSTANT, 0, "{\"type\":\"Interval\",\"interval\":99}", 33);
    marker_emit(k, "test", MS(50.152), MS(1816.152), 2, "{\"type\":\"Test\"}", 15);
    marker_emit(k, "na\"me\n", MS(100), MARKER_INSTANT, 0, NULL, 0);
    marker_emit(k, "early", T0 - 1500000, T0 + 400, 0, "{\"type\":\"Text\"}", 15);
    ck_assert_uint_eq(stream_lines(s), 8);
    ck_assert_uint_eq(stream_write_errors(s), 0);
    ck_assert(fcntl(stream_fd(s), F_GETFL) & O_APPEND);
    stream_close(s);
    char *text = slurp(path, NULL), *l;
    l = line_at(text, 3);
    ck_assert_str_eq(l, "{\"type\":\"marker\",\"name\":\"CPU Use\",\"startTime\":35.723,\"endTime\":139.297,"
                        "\"data\":{\"type\":\"CPU\",\"cpuPercent\":\"54.5%\"}}");
    free(l);
    l = line_at(text, 4);
    ck_assert_str_eq(l, "{\"type\":\"marker\",\"name\":\"Sampling Interval\",\"startTime\":139.297,\"endTime\":null,"
                        "\"data\":{\"type\":\"Interval\",\"interval\":99}}");
    free(l);
    l = line_at(text, 5);
    ck_assert_str_eq(l, "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":50.152,\"endTime\":1816.152,"
                        "\"data\":{\"type\":\"Test\"},\"category\":2}");
    free(l);
    l = line_at(text, 6);
    ck_assert_str_eq(l, "{\"type\":\"marker\",\"name\":\"na\\\"me\\n\",\"startTime\":100.0,\"endTime\":null,"
                        "\"data\":null}");
    free(l);
    l = line_at(text, 7);
    ck_assert_str_eq(l, "{\"type\":\"marker\",\"name\":\"early\",\"startTime\":-1.5,\"endTime\":0.0,"
                        "\"data\":{\"type\":\"Text\"}}");
    free(l);
}
END_TEST

START_TEST(test_state_lines)
{
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    const char open[] = "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"a\",\"name\":\"test\",\"startNs\":5000000000}";
    marker_state(stream_sink(s), open, strlen(open));
    marker_state(stream_sink(s), "{\"type\":\"x\"}\n{\"type\":\"y\"}", 25);
    ck_assert_uint_eq(stream_lines(s), 4);
    struct stream_health h;
    stream_health(s, &h);
    ck_assert_uint_eq(h.lines_lost, 1); /* a line holding a newline is refused */
    ck_assert_uint_eq(h.failed_writes, 0);
    stream_close(s);
    char *l = line_at(slurp(path, NULL), 3);
    ck_assert_str_eq(l, open);
    free(l);
}
END_TEST

START_TEST(test_format_ms)
{
    char b[32];
    struct {
        double v;
        const char *s;
    } cases[] = {{0, "0.0"},           {100, "100.0"},        {35.182, "35.182"},    {35.18, "35.18"},
                 {0.0004, "0.0"},      {0.0005, "0.001"},     {-1.5, "-1.5"},        {-0.0001, "0.0"},
                 {4179.978, "4179.978"}, {1e13, "10000000000000.0"}, {0.0 / 0.0, "0.0"}};
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        size_t n = stream_format_ms(cases[i].v, b);
        b[n] = '\0';
        ck_assert_str_eq(b, cases[i].s);
    }
    struct stream_meta m = meta_default();
    char path[256];
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    ck_assert(stream_ms(s, T0 + 1234567) == 1.235);
    ck_assert(stream_ms(s, T0 + 1234499) == 1.234);
    ck_assert(stream_ms(s, T0 - 2000000) == -2.0);
    /* Large monotonic values (a machine up for a year) keep microsecond precision. */
    stream_close(s);
    m.t0_ns = UINT64_C(31536000000000000);
    s = open_in_dir("t.jsonl", &m, path, sizeof path);
    ck_assert(stream_ms(s, m.t0_ns + 1001) == 0.001);
    stream_close(s);
}
END_TEST

START_TEST(test_refuses_symlink_and_special_files)
{
    char target[256], link[256], path[256];
    struct stream_meta m = meta_default();
    struct stream *s = NULL;
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    FILE *f = fopen(target, "w");
    fputs("precious\n", f);
    fclose(f);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(stream_open(AT_FDCWD, link, &m, 0, &s), -ELOOP);
    ck_assert_str_eq(slurp(target, NULL), "precious\n");
    /* A dangling symlink must not create its target either. */
    snprintf(path, sizeof path, "%s/dangling", dir);
    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    ck_assert_int_eq(symlink(missing, path), 0);
    ck_assert_int_eq(stream_open(AT_FDCWD, path, &m, 0, &s), -ELOOP);
    ck_assert_int_eq(access(missing, F_OK), -1);
    snprintf(path, sizeof path, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(stream_open(AT_FDCWD, path, &m, 0, &s), -EINVAL);
    ck_assert_int_eq(stream_open(AT_FDCWD, dir, &m, 0, &s), -EISDIR);
    ck_assert_int_eq(stream_open(AT_FDCWD, "/dev/null", &m, 0, &s), -EINVAL);
    snprintf(path, sizeof path, "%s/no/such/dir", dir);
    ck_assert_int_eq(stream_open(AT_FDCWD, path, &m, 0, &s), -ENOENT);
    ck_assert_ptr_null(s);
}
END_TEST

START_TEST(test_truncates_and_umask)
{
    char path[256];
    snprintf(path, sizeof path, "%s/s.jsonl", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 1000; i++)
        fputs("old content old content old content\n", f);
    fclose(f);
    chmod(path, 0644);
    struct stream_meta m = meta_default();
    struct stream *s;
    ck_assert_int_eq(stream_open(AT_FDCWD, path, &m, 0, &s), 0);
    /* the file that was there, removed: its last close is the caller's if taken */
    int replaced = stream_take_replaced(s);
    struct stat rst;
    ck_assert_int_ge(replaced, 0);
    ck_assert_int_eq(fstat(replaced, &rst), 0);
    ck_assert_int_eq(rst.st_nlink, 0);
    ck_assert_int_eq(rst.st_size, 36000); /* the 1 000 old lines */
    close(replaced);
    ck_assert_int_eq(stream_take_replaced(s), -1);
    stream_close(s);
    char *text = slurp(path, NULL);
    ck_assert(strstr(text, "old content") == NULL);
    ck_assert(strncmp(text, "{\"type\":\"meta\"", 14) == 0);
    mode_t old = umask(027);
    snprintf(path, sizeof path, "%s/new.jsonl", dir);
    ck_assert_int_eq(stream_open(AT_FDCWD, path, &m, 1, &s), 0); /* fsync after every line */
    ck_assert_int_eq(stream_take_replaced(s), -1); /* nothing was there */
    marker_emit(stream_sink(s), "x", T0, MARKER_INSTANT, 0, NULL, 0);
    ck_assert_int_eq(stream_sync(s), 0);
    stream_close(s);
    umask(old);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
}
END_TEST

/* Every complete line of the file parses; returns how many do. */
static int count_valid_lines(const char *text, int *ret_bad)
{
    int good = 0, bad = 0;
    const char *p = text;
    const char *e;
    while ((e = strchr(p, '\n'))) {
        cJSON *o = cJSON_ParseWithLength(p, (size_t)(e - p));
        if (o)
            good++;
        else
            bad++;
        cJSON_Delete(o);
        p = e + 1;
    }
    *ret_bad = bad;
    return good;
}

START_TEST(test_write_errors_counted)
{
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    /* The disk fills up: every later write fails with ENOSPC. */
    int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(full, 0);
    int saved = dup(stream_fd(s));
    ck_assert_int_ge(dup2(full, stream_fd(s)), 0);
    for (int i = 0; i < 10; i++)
        marker_emit(stream_sink(s), "CPU Use", MS(i), MS(i + 1), 0, "{\"type\":\"CPU\"}", 14);
    ck_assert_uint_eq(stream_write_errors(s), 10);
    ck_assert_int_eq(stream_last_error(s), -ENOSPC);
    ck_assert_uint_eq(stream_lines(s), 3);
    struct stream_health h;
    stream_health(s, &h);
    ck_assert_uint_eq(h.lines_waiting, 10); /* kept for a retry */
    ck_assert_uint_eq(h.lines_lost, 0);
    /* Space comes back: what waited is written first, in order, then the new line. */
    ck_assert_int_ge(dup2(saved, stream_fd(s)), 0);
    marker_emit(stream_sink(s), "after", MS(20), MARKER_INSTANT, 0, NULL, 0);
    ck_assert_uint_eq(stream_lines(s), 14);
    stream_health(s, &h);
    ck_assert_uint_eq(h.lines_waiting, 0);
    ck_assert_int_eq(h.error, 0);
    close(full);
    close(saved);
    stream_close(s);
    int bad;
    char *text = slurp(path, NULL);
    ck_assert_int_eq(count_valid_lines(text, &bad), 14);
    ck_assert_int_eq(bad, 0);
    ck_assert(strstr(text, "\"startTime\":9.0,") < strstr(text, "\"name\":\"after\""));
}
END_TEST

/* A real full filesystem: a small tmpfs in a private mount namespace (skipped where mounting is
 * not allowed). Every line counted as written is whole in the file; the others wait in memory,
 * and when space comes back they are written in order, without a torn line. With held lines
 * (flushed every 7 lines), a failed batch waits the same way. */
static void fill_tmpfs(bool hold)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWNS) < 0) {
        /* Unprivileged: a user namespace of our own, our ids mapped (files we create there must
         * have an owner), then the mount namespace. */
        ck_assert_int_eq(unshare(CLONE_NEWUSER | CLONE_NEWNS), 0);
        char map[64];
        int fd = open("/proc/self/setgroups", O_WRONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "deny", 4), 4);
        close(fd);
        snprintf(map, sizeof map, "%d %d 1", (int)uid, (int)uid);
        fd = open("/proc/self/uid_map", O_WRONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, map, strlen(map)), (ssize_t)strlen(map));
        close(fd);
        snprintf(map, sizeof map, "%d %d 1", (int)gid, (int)gid);
        fd = open("/proc/self/gid_map", O_WRONLY);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, map, strlen(map)), (ssize_t)strlen(map));
        close(fd);
    }
    ck_assert_int_eq(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL), 0);
    ck_assert_int_eq(mount("tmpfs", dir, "tmpfs", 0, "size=16k"), 0);
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    stream_hold(s, hold);
    char data[200];
    for (int i = 0; i < 400; i++) {
        int n = snprintf(data, sizeof data, "{\"type\":\"Text\",\"text\":\"marker number %d padding padding\"}", i);
        marker_emit(stream_sink(s), "m", MS(i), MS(i + 1), 0, data, (size_t)n);
        if (i % 7 == 6)
            stream_flush(s);
    }
    stream_flush(s);
    ck_assert_uint_gt(stream_write_errors(s), 0);
    ck_assert_int_eq(stream_last_error(s), -ENOSPC);
    struct stream_health h;
    stream_health(s, &h);
    ck_assert_uint_eq(h.lines_lost, 0);
    /* a partly written line counts as waiting, not as written */
    ck_assert_uint_eq(stream_lines(s) - 3 + h.lines_waiting, 400);
    int bad;
    ck_assert_int_eq(count_valid_lines(slurp(path, NULL), &bad), (int)stream_lines(s));
    ck_assert_int_le(bad, 1);
    /* Space comes back (the tmpfs grows): everything is written, nothing torn. */
    ck_assert_int_eq(mount("tmpfs", dir, "tmpfs", MS_REMOUNT, "size=1m"), 0);
    ck_assert_int_eq(stream_flush(s), 0);
    ck_assert_uint_eq(stream_lines(s), 403);
    stream_close(s);
    ck_assert_int_eq(count_valid_lines(slurp(path, NULL), &bad), 403);
    ck_assert_int_eq(bad, 0);
    umount(dir);
}

START_TEST(test_enospc_tmpfs) { fill_tmpfs(false); }
END_TEST

START_TEST(test_held_lines_enospc) { fill_tmpfs(true); }
END_TEST

/* Held lines reach the file only at a flush, all in one piece, and are counted then; a close
 * flushes; 256 KiB held are written without being asked. */
/* State lines taken back before the flush are not written, the others keep their order; a handle
 * of a line already written takes nothing back; without holding there is nothing to take back. */
START_TEST(test_retract)
{
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    const struct marker_sink *sink = stream_sink(s);
    static const char a[] = "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"a\"}",
                      b[] = "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"b\"}",
                      c[] = "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"c\"}";
    ck_assert_uint_eq(marker_state_open(sink, a, strlen(a)), 0); /* not holding: written at once */
    stream_hold(s, true);
    uint64_t ha = marker_state_open(sink, a, strlen(a));
    marker_emit(sink, "m1", MS(1), MARKER_INSTANT, 0, NULL, 0);
    uint64_t hb = marker_state_open(sink, b, strlen(b));
    uint64_t hc = marker_state_open(sink, c, strlen(c));
    marker_emit(sink, "m2", MS(2), MARKER_INSTANT, 0, NULL, 0);
    ck_assert(ha && hb && hc);
    ck_assert(marker_state_retract(sink, ha));
    ck_assert(!marker_state_retract(sink, ha)); /* once */
    ck_assert(marker_state_retract(sink, hc));
    ck_assert(!marker_state_retract(sink, 0));
    uint64_t before = stream_lines(s);
    ck_assert_int_eq(stream_flush(s), 0);
    ck_assert_uint_eq(stream_lines(s), before + 3);
    ck_assert(!marker_state_retract(sink, hb)); /* written */
    uint64_t ha2 = marker_state_open(sink, a, strlen(a));
    ck_assert_uint_ne(ha2, ha);
    ck_assert_int_eq(stream_flush(s), 0);
    ck_assert(!marker_state_retract(sink, ha2));
    stream_close(s);
    const char *text = slurp(path, NULL);
    /* the first a (written at once) is directly followed by m1: the held a was taken back */
    ck_assert_ptr_nonnull(strstr(text, "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"a\"}\n{\"type\":\"marker\",\"name\":\"m1\""));
    const char *first_a = strstr(text, a), *m1 = strstr(text, "\"name\":\"m1\""), *pb = strstr(text, b),
               *m2 = strstr(text, "\"name\":\"m2\"");
    ck_assert(first_a && m1 && pb && m2);
    ck_assert(first_a < m1 && m1 < pb && pb < m2);
    ck_assert_ptr_null(strstr(text, c));
    ck_assert_ptr_nonnull(strstr(m2, a)); /* the second held a went out with the last flush */
    int bad;
    ck_assert_int_eq(count_valid_lines(text, &bad), 3 + 1 + 3 + 1);
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* Random state lines, some taken back, flushes and the hold limit in between, against a model of
 * what the file must hold, line for line. */
START_TEST(test_retract_random)
{
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    const struct marker_sink *sink = stream_sink(s);
    stream_hold(s, true);
    enum { OPS = 3000 };
    static char *all[OPS], *held[OPS];
    static const char *want[OPS];
    static bool live[OPS];
    static uint64_t handles[OPS], hpos[OPS]; /* hpos: index in held, UINT64_MAX once written */
    static char pad[20001];
    memset(pad, 'p', sizeof pad - 1);
    size_t nall = 0, nwant = 0, nheld = 0, nh = 0, held_bytes = 0, limit_writes = 0;
    unsigned seed = 12345;
    for (int op = 0; op < OPS; op++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 16) % 100;
        bool write_held = false;
        if (r < 60) {
            char *line;
            int padn = (seed >> 8) % 10 == 0 ? 20000 : (int)((seed >> 4) % 20);
            ck_assert_int_gt(asprintf(&line, "{\"type\":\"x\",\"k\":%d,\"pad\":\"%.*s\"}", op, padn, pad), 0);
            all[nall++] = line;
            held[nheld] = line;
            live[nheld] = true;
            held_bytes += strlen(line) + 1;
            if (r < 30) {
                handles[nh] = marker_state_open(sink, line, strlen(line));
                hpos[nh++] = nheld;
            } else
                marker_state(sink, line, strlen(line));
            nheld++;
            if (held_bytes >= 256 * 1024) { /* the hold limit writes what is held */
                write_held = true;
                limit_writes++;
            }
        } else if (r < 99 && nh) {
            size_t k = (seed >> 4) % nh;
            bool expect = hpos[k] != UINT64_MAX && live[hpos[k]];
            ck_assert_int_eq(marker_state_retract(sink, handles[k]), expect);
            if (expect)
                live[hpos[k]] = false;
        } else {
            ck_assert_int_eq(stream_flush(s), 0);
            write_held = true;
        }
        if (write_held) {
            for (size_t k = 0; k < nheld; k++)
                if (live[k])
                    want[nwant++] = held[k];
            nheld = held_bytes = 0;
            for (size_t k = 0; k < nh; k++)
                hpos[k] = UINT64_MAX;
        }
    }
    ck_assert_uint_gt(limit_writes, 0);
    ck_assert_int_eq(stream_flush(s), 0);
    for (size_t k = 0; k < nheld; k++)
        if (live[k])
            want[nwant++] = held[k];
    ck_assert_uint_eq(stream_lines(s), 3 + nwant);
    stream_close(s);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    rewind(f);
    char *text = malloc(len + 1);
    ck_assert_uint_eq(fread(text, 1, len, f), len);
    fclose(f);
    text[len] = '\0';
    char *p = text;
    for (int k = 0; k < 3; k++)
        p = strchr(p, '\n') + 1;
    for (size_t k = 0; k < nwant; k++) {
        size_t n = strlen(want[k]);
        ck_assert_msg(strncmp(p, want[k], n) == 0 && p[n] == '\n', "line %zu differs", k);
        p += n + 1;
    }
    ck_assert_uint_eq((size_t)(p - text), len);
    free(text);
    for (size_t k = 0; k < nall; k++)
        free(all[k]);
}
END_TEST

START_TEST(test_held_lines)
{
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("s.jsonl", &m, path, sizeof path);
    struct stat st0, st1;
    ck_assert_int_eq(fstat(stream_fd(s), &st0), 0);
    stream_hold(s, true);
    for (int i = 0; i < 5; i++)
        marker_emit(stream_sink(s), "m", MS(i), MARKER_INSTANT, 0, NULL, 0);
    static const char close_line[] = "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"t\"}";
    stream_state(s, close_line, strlen(close_line));
    ck_assert_int_eq(fstat(stream_fd(s), &st1), 0);
    ck_assert_int_eq(st1.st_size, st0.st_size);
    ck_assert_uint_eq(stream_lines(s), 3);
    ck_assert_int_eq(stream_flush(s), 0);
    ck_assert_uint_eq(stream_lines(s), 9);
    ck_assert_int_eq(stream_flush(s), 0); /* nothing held: nothing to do */
    ck_assert_uint_eq(stream_lines(s), 9);
    int bad;
    ck_assert_int_eq(count_valid_lines(slurp(path, NULL), &bad), 9);
    ck_assert_int_eq(bad, 0);
    ck_assert_ptr_nonnull(strstr(slurp(path, NULL), "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"t\"}\n"));
    /* 256 KiB held: written without a flush. */
    char data[1100];
    int n = snprintf(data, sizeof data, "{\"type\":\"Text\",\"text\":\"%01000d\"}", 7);
    uint64_t before = stream_lines(s);
    int k = 0;
    while (stream_lines(s) == before) {
        marker_emit(stream_sink(s), "big", MS(1), MARKER_INSTANT, 0, data, (size_t)n);
        ck_assert_int_lt(++k, 300);
    }
    ck_assert_int_gt(k, 200);
    ck_assert_uint_eq(stream_lines(s), before + (uint64_t)k);
    /* The rest goes out at close. */
    marker_emit(stream_sink(s), "last", MS(2), MARKER_INSTANT, 0, NULL, 0);
    stream_close(s);
    ck_assert_int_eq(count_valid_lines(slurp(path, NULL), &bad), 9 + k + 1);
    ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(test_schemas)
{
    /* The meta line carries the marker types' schemas (markers.h), exactly. */
    char path[256];
    struct stream_meta m = meta_default();
    struct stream *s = open_in_dir("schemas.jsonl", &m, path, sizeof path);
    stream_close(s);
    char *text = slurp(path, NULL);
    char *nl = strchr(text, '\n');
    ck_assert_ptr_nonnull(nl);
    cJSON *meta = cJSON_ParseWithLength(text, (size_t)(nl - text));
    ck_assert_ptr_nonnull(meta);
    struct jsonw w;
    jsonw_init(&w);
    marker_schemas_write(&w);
    cJSON *mine = cJSON_Parse(w.buf);
    ck_assert(cJSON_Compare(mine, cJSON_GetObjectItem(meta, "markerSchema"), true));
    cJSON_Delete(mine);
    cJSON_Delete(meta);
    jsonw_release(&w);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_header_lines);
    tcase_add_test(tc, test_marker_lines);
    tcase_add_test(tc, test_state_lines);
    tcase_add_test(tc, test_format_ms);
    tcase_add_test(tc, test_refuses_symlink_and_special_files);
    tcase_add_test(tc, test_truncates_and_umask);
    tcase_add_test(tc, test_write_errors_counted);
    tcase_add_test(tc, test_enospc_tmpfs);
    tcase_add_test(tc, test_schemas);
    tcase_add_test(tc, test_held_lines);
    tcase_add_test(tc, test_retract);
    tcase_add_test(tc, test_retract_random);
    tcase_add_test(tc, test_held_lines_enospc);
    suite_add_tcase(s, tc);
    return check_run(s);
}

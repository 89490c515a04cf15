/* profile-tool — drives the stream and profile modules from the shell, for the integration tests
 * and scripts/bench-profile.
 *
 *   profile-tool recover IN [OUT]          profile_recover; exit 0 (prints "already full" when
 *                                           nothing had to be done), 1 on error
 *   profile-tool finalize IN OUT [END_MS [STATUS]]
 *                                           profile_finalize of the stream IN; prints
 *                                           "markers skipped closed bytes ms maxrss_kib cpu_ms"
 *                                           (PROFILE_TOOL_NO_SYNC=1: profile_convert only;
 *                                           PROFILE_TOOL_FOLLOW=1: a follower reads IN first, untimed,
 *                                           as during a run, then profile_conv_finalize is timed)
 *   profile-tool detect FILE               prints stream, full or other
 *   profile-tool gen N OUT                 writes a realistic stream of about N markers to OUT
 *                                           (samples every 100 ms, tests with subtests and state
 *                                           lines, a few tests left open at the end)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "profile/profile.h"
#include "profile/stream.h"

static int usage(void)
{
    fprintf(stderr, "usage: profile-tool recover IN [OUT] | finalize IN OUT [END_MS [STATUS]] | detect FILE | "
                    "gen N OUT\n");
    return 2;
}

static int cmd_recover(int argc, char **argv)
{
    struct profile_stats st = {0};
    int r = profile_recover(argv[0], argc > 1 ? argv[1] : NULL, argc > 1 && profile_path_wants_gzip(argv[1]), &st);
    if (r == PROFILE_RECOVER_ALREADY_FULL) {
        printf("already full\n");
        return 0;
    }
    if (r < 0) {
        fprintf(stderr, "profile-tool: recover %s: %s\n", argv[0], strerror(-r));
        return 1;
    }
    printf("markers %llu skipped %llu closed %llu\n", (unsigned long long)st.markers,
           (unsigned long long)st.skipped_lines, (unsigned long long)st.closed_open);
    return 0;
}

static int cmd_finalize(int argc, char **argv)
{
    int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(argv[0]);
        return 1;
    }
    struct profile_end end = {.end_ms = argc > 2 ? strtod(argv[2], NULL) : -1,
                              .open_status = argc > 3 ? argv[3] : "INCOMPLETE"};
    struct profile_stats st = {0};
    struct profile_conv *pc = NULL;
    int r;
    if (getenv("PROFILE_TOOL_FOLLOW") && ((r = profile_conv_new(fd, &pc)) < 0 || (r = profile_conv_update(pc)) < 0)) {
        fprintf(stderr, "profile-tool: follow: %s\n", strerror(-r));
        return 1;
    }
    struct rusage ru0;
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t = now_ns();
    if (pc)
        r = profile_conv_finalize(pc, AT_FDCWD, argv[1], &end, &st);
    else if (getenv("PROFILE_TOOL_NO_SYNC")) {
        /* Conversion alone, to separate its cost from the storage's fsync latency. */
        int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        r = out < 0 ? -errno : profile_convert(fd, out, &end, &st);
        if (out >= 0)
            close(out);
    } else
        r = profile_finalize(fd, AT_FDCWD, argv[1], &end, &st);
    t = now_ns() - t;
    profile_conv_free(pc);
    close(fd);
    if (r < 0) {
        fprintf(stderr, "profile-tool: finalize: %s\n", strerror(-r));
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu_ms = (double)(ru.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1e3 +
                    (double)(ru.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e3;
    printf("%llu %llu %llu %llu %.1f %ld %.1f\n", (unsigned long long)st.markers, (unsigned long long)st.skipped_lines,
           (unsigned long long)st.closed_open, (unsigned long long)st.bytes, (double)t / 1e6, ru.ru_maxrss, cpu_ms);
    return 0;
}

static int cmd_detect(char **argv)
{
    int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(argv[0]);
        return 1;
    }
    enum profile_kind k = profile_detect(fd);
    close(fd);
    puts(k == PROFILE_KIND_STREAM ? "stream" : k == PROFILE_KIND_FULL ? "full" : "other");
    return 0;
}

/* One sample's worth of the sampler's markers (9), at t..t+100 ms. */
static size_t gen_sample(struct stream *s, const struct marker_sink *k, uint64_t t, uint64_t iv, unsigned i,
                         struct jsonw *w)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "{\"type\":\"CPU\",\"cpuPercent\":\"%u.5%%\",\"nice\":0.0,\"user\":0.%03u,\"system\":0.524,"
                     "\"iowait\":0.524,\"softirq\":0.524,\"nice_pct\":\"0.0%%\",\"user_pct\":\"48.3%%\","
                     "\"system_pct\":\"4.8%%\",\"iowait_pct\":\"0.0%%\",\"idle_pct\":\"48.3%%\"}",
                     i % 100, i % 1000);
    marker_emit(k, "CPU Use", t, t + iv, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf, "{\"type\":\"Mem\",\"used\":%llu,\"cached\":2337554432,\"buffers\":74792960}",
                 473350144ULL + i * 4096ULL);
    marker_emit(k, "Memory", t, t + iv, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf,
                 "{\"type\":\"IO\",\"read_count\":%u,\"read_bytes\":%u,\"write_count\":3,\"write_bytes\":12288}", i % 7,
                 (i % 7) * 4096);
    marker_emit(k, "IO", t, t + iv, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf,
                 "{\"type\":\"NetIO\",\"recv_count\":2,\"recv_bytes\":%u,\"sent_count\":1,\"sent_bytes\":66}", 100 + i % 50);
    marker_emit(k, "NetIO", t, t + iv, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf, "{\"type\":\"Interval\",\"interval\":100}");
    marker_emit(k, "Sampling Interval", t + iv, MARKER_INSTANT, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf, "{\"type\":\"TreeCPU\",\"cpuTime\":%u.25,\"user\":80.0,\"system\":%u.25,\"cores\":0.%u}",
                 90 + i % 10, 10 + i % 10, i % 10);
    marker_emit(k, "Tree CPU", t, t + iv, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf, "{\"type\":\"TreeMem\",\"rss\":%llu}", 104857600ULL + i * 8192ULL);
    marker_emit(k, "Tree Memory", t, t + iv, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf, "{\"type\":\"TreeIO\",\"read_bytes\":0,\"write_bytes\":%u}", (i % 3) * 65536);
    marker_emit(k, "Tree IO", t, t + iv, 0, buf, (size_t)n);
    n = snprintf(buf, sizeof buf, "{\"type\":\"TreeCount\",\"processes\":%u,\"threads\":%u}", 3 + i % 4, 10 + i % 9);
    marker_emit(k, "Processes", t, t + iv, 0, buf, (size_t)n);
    (void)s;
    (void)w;
    return 9;
}

static int cmd_gen(char **argv)
{
    unsigned long long target = strtoull(argv[0], NULL, 10);
    uint64_t t0 = UINT64_C(1000000000000);
    const char *keys[] = {"device", "sourceURL"};
    const char *vals[] = {"bench-box", "https://example.org/rev/0123456789abcdef"};
    struct stream_meta meta = {.product = "xpcshell", .interval_ms = 100.0, .start_wall_ms = 1796212070184.848,
                               .t0_ns = t0, .logical_cpus = 2, .physical_cpus = 2,
                               .main_memory = 25275953152ULL, .extra_keys = keys, .extra_values = vals,
                               .n_extra = 2};
    struct stream *s;
    int r = stream_open(AT_FDCWD, argv[1], &meta, 0, &s);
    if (r < 0) {
        fprintf(stderr, "profile-tool: %s: %s\n", argv[1], strerror(-r));
        return 1;
    }
    const struct marker_sink *k = stream_sink(s);
    struct jsonw w;
    jsonw_init(&w);
    uint64_t iv = 100 * NSEC_PER_MSEC, t = t0 + 5 * NSEC_PER_MSEC;
    unsigned long long count = 0;
    unsigned test = 0;
    uint64_t test_start = t;
    char id[128];
    /* Per 100 ms: one sample (9 markers), and every third sample a test ends (a subtest result, the
     * test marker) and the next one starts. */
    for (unsigned i = 0; count < target; i++, t += iv) {
        count += gen_sample(s, k, t, iv, i, &w);
        if (i % 3 == 2) {
            snprintf(id, sizeof id, "dom/tests/unit/dir%u/test_case_%u.js", test % 50, test);
            char buf[512];
            int n = snprintf(buf, sizeof buf,
                             "{\"type\":\"TestStatus\",\"color\":\"green\",\"subtest\":\"check %u\",\"test\":\"%s\","
                             "\"message\":\"ok\"}",
                             test, id);
            marker_emit(k, "PASS", t, MARKER_INSTANT, 0, buf, (size_t)n);
            n = snprintf(buf, sizeof buf,
                         "{\"type\":\"Test\",\"test\":\"%s\",\"name\":\"test_case_%u.js\",\"status\":\"PASS\","
                         "\"color\":\"green\",\"cpuTime\":%u.5,\"maxRSS\":%u}",
                         id, test, 250 + test % 100, 104857600 + test);
            marker_emit(k, "test", test_start, t, 2, buf, (size_t)n);
            jsonw_reset(&w);
            jsonw_obj_open(&w);
            jsonw_kv_str(&w, "type", "close");
            jsonw_kv_str(&w, "kind", "test");
            jsonw_kv_str(&w, "key", id);
            jsonw_obj_close(&w);
            stream_state(s, w.buf, w.len);
            count += 2;
            test++;
            test_start = t;
            snprintf(id, sizeof id, "dom/tests/unit/dir%u/test_case_%u.js", test % 50, test);
            jsonw_reset(&w);
            jsonw_obj_open(&w);
            jsonw_kv_str(&w, "type", "open");
            jsonw_kv_str(&w, "kind", "test");
            jsonw_kv_str(&w, "key", id);
            jsonw_kv_str(&w, "name", "test");
            jsonw_kv_uint(&w, "startNs", t);
            jsonw_kv_int(&w, "category", 2);
            jsonw_key(&w, "data");
            jsonw_obj_open(&w);
            jsonw_kv_str(&w, "type", "Test");
            jsonw_kv_str(&w, "test", id);
            snprintf(id, sizeof id, "test_case_%u.js", test);
            jsonw_kv_str(&w, "name", id);
            jsonw_obj_close(&w);
            jsonw_obj_close(&w);
            stream_state(s, w.buf, w.len);
        }
    }
    jsonw_release(&w);
    int err = stream_write_errors(s) ? 1 : 0;
    stream_close(s);
    printf("%llu\n", count);
    return err;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    if (strcmp(argv[1], "recover") == 0)
        return cmd_recover(argc - 2, argv + 2);
    if (strcmp(argv[1], "finalize") == 0 && argc >= 4)
        return cmd_finalize(argc - 2, argv + 2);
    if (strcmp(argv[1], "detect") == 0)
        return cmd_detect(argv + 2);
    if (strcmp(argv[1], "gen") == 0 && argc >= 4)
        return cmd_gen(argv + 2);
    return usage();
}

/* Unit tests of the limits (limits.h: what reaching each limit says, the CPU deadline, telling the
 * OOM killer's deaths from others) and of the pressure figures (pressure.h: the markers of an
 * interval, the memory-pressure warning once per episode, reading at most once a second), on
 * files written here in place of /proc. */
#include "observe/limits.h"

#include <check.h>
#include "check_run.h"
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "observe/pressure.h"
#include "observe/sampler.h"

/* ---- a sink that keeps what it is given ---- */

struct got {
    char names[64][32];
    char data[64][512];
    uint64_t start[64], end[64];
    int n;
    int states;
};

static void got_marker(void *ctx, const char *name, uint64_t start, uint64_t end, int cat, const char *data,
                       size_t len)
{
    (void)cat;
    struct got *g = ctx;
    if (g->n >= 64)
        return;
    snprintf(g->names[g->n], sizeof g->names[0], "%s", name);
    snprintf(g->data[g->n], sizeof g->data[0], "%.*s", (int)len, data);
    g->start[g->n] = start;
    g->end[g->n] = end;
    g->n++;
}

static void got_state(void *ctx, const char *line, size_t len)
{
    (void)line, (void)len;
    ((struct got *)ctx)->states++;
}

static int find(const struct got *g, const char *name, int from)
{
    for (int i = from; i < g->n; i++)
        if (!strcmp(g->names[i], name))
            return i;
    return -1;
}

static char dir[] = "/tmp/unit_limits.XXXXXX";

static void put(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char p[256];
    snprintf(p, sizeof p, "%s/pressure", dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/cg", dir);
    ck_assert_int_eq(mkdir(p, 0755), 0);
}

/* The three files of a scope: the machine's (pressure/RES) or a cgroup's (cg/RES.pressure). */
static void teardown(void)
{
    if (strstr(dir, "XXXXXX"))
        return; /* never made */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void psi_files(bool cgroup, double avg60, unsigned long long total)
{
    static const char *const res[] = {"cpu", "memory", "io"};
    for (int i = 0; i < 3; i++) {
        char rel[64], text[256];
        if (cgroup)
            snprintf(rel, sizeof rel, "cg/%s.pressure", res[i]);
        else
            snprintf(rel, sizeof rel, "pressure/%s", res[i]);
        snprintf(text, sizeof text,
                 "some avg10=0.00 avg60=%.2f avg300=0.00 total=%llu\n"
                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=%llu\n",
                 i == 1 ? avg60 : 0.0, total * (unsigned long long)(i + 1), total / 2);
        put(rel, text);
    }
}

START_TEST(test_pressure_markers_and_warning)
{
    setup();
    int proc = open(dir, O_PATH | O_DIRECTORY);
    ck_assert_int_ge(proc, 0);
    psi_files(false, 2.0, 1000);
    struct got g = {0};
    struct marker_sink sink = {.marker = got_marker, .state = got_state, .ctx = &g};
    struct pressure *p = NULL;
    ck_assert_int_eq(pressure_new(proc, -1, &sink, &p), 0);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(pressure_files(p), 3);
    ck_assert_int_eq(g.states, 3); /* the machine's three counters, no tree's */
    const uint64_t s = NSEC_PER_SEC;
    pressure_sample(p, 1 * s, true); /* the baseline: no marker */
    ck_assert_int_eq(g.n, 0);
    /* 5 ms of stall (totals in us) at the first sample, read however soon it comes */
    psi_files(false, 2.0, 6000);
    pressure_sample(p, 1 * s + s / 10, false);
    ck_assert_int_eq(g.n, 1);
    ck_assert_str_eq(g.names[0], "Pressure");
    ck_assert_uint_eq(g.start[0], 1 * s);
    ck_assert_uint_eq(g.end[0], 1 * s + s / 10);
    cJSON *d = cJSON_Parse(g.data[0]);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(cJSON_GetObjectItem(d, "type")->valuestring, "Pressure");
    ck_assert_double_eq_tol(cJSON_GetObjectItem(d, "cpuSome")->valuedouble, 5.0, 1e-9);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(d, "memorySome")->valuedouble, 10.0, 1e-9);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(d, "memoryFull")->valuedouble, 2.5, 1e-9);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(d, "ioSome")->valuedouble, 15.0, 1e-9);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(d, "memoryAvg60")->valuedouble, 0.02, 1e-9);
    cJSON_Delete(d);
    struct pressure_worst w;
    pressure_worst_memory(p, &w);
    ck_assert(w.known && !w.tree);
    ck_assert_double_eq_tol(w.avg60, 2.0, 1e-9);

    /* within a second of the last read, nothing is read (the totals lose nothing) */
    psi_files(false, 41.0, 9000);
    pressure_sample(p, 2 * s, false);
    ck_assert_int_eq(g.n, 1);
    /* past it: the stall and the warning, once */
    pressure_sample(p, 3 * s, false);
    int warn = find(&g, "memory pressure", 0);
    ck_assert_int_ge(warn, 0);
    ck_assert_uint_eq(g.start[warn], 3 * s);
    ck_assert_uint_eq(g.end[warn], MARKER_INSTANT);
    d = cJSON_Parse(g.data[warn]);
    ck_assert_str_eq(cJSON_GetObjectItem(d, "type")->valuestring, "Warning");
    ck_assert_str_eq(cJSON_GetObjectItem(d, "message")->valuestring,
                     "memory pressure: 41% of the last minute stalled (the machine)");
    cJSON_Delete(d);
    psi_files(false, 45.0, 12000);
    pressure_sample(p, 4 * s, false);
    ck_assert_int_eq(find(&g, "memory pressure", warn + 1), -1);
    pressure_worst_memory(p, &w);
    ck_assert_double_eq_tol(w.avg60, 45.0, 1e-9);
    ck_assert_uint_eq(w.at_ns, 4 * s);
    /* the episode ends below half the threshold; a new one warns again */
    psi_files(false, 4.0, 12000);
    pressure_sample(p, 5 * s, false);
    ck_assert_int_eq(find(&g, "memory pressure", warn + 1), -1);
    psi_files(false, 12.0, 13000);
    pressure_sample(p, 6 * s, false);
    ck_assert_int_gt(find(&g, "memory pressure", warn + 1), warn);
    pressure_free(p);
    close(proc);
}
END_TEST

START_TEST(test_pressure_tree_speaks_for_the_tree)
{
    setup();
    int proc = open(dir, O_PATH | O_DIRECTORY);
    char cgp[256];
    snprintf(cgp, sizeof cgp, "%s/cg", dir);
    int cg = open(cgp, O_PATH | O_DIRECTORY);
    psi_files(false, 0.0, 1000);
    psi_files(true, 0.0, 1000);
    struct got g = {0};
    struct marker_sink sink = {.marker = got_marker, .state = got_state, .ctx = &g};
    struct pressure *p = NULL;
    ck_assert_int_eq(pressure_new(proc, cg, &sink, &p), 0);
    ck_assert_uint_eq(pressure_files(p), 6);
    ck_assert_int_eq(g.states, 6);
    pressure_sample(p, NSEC_PER_SEC, true);
    /* the machine is calm, the tree thrashes: the warning names the tree */
    psi_files(true, 30.0, 5000);
    pressure_sample(p, 2 * NSEC_PER_SEC, true);
    ck_assert_int_ge(find(&g, "Pressure", 0), 0);
    ck_assert_int_ge(find(&g, "Tree Pressure", 0), 0);
    int warn = find(&g, "memory pressure", 0);
    ck_assert_int_ge(warn, 0);
    ck_assert_ptr_nonnull(strstr(g.data[warn], "30% of the last minute stalled (the tree)"));
    struct pressure_worst w;
    pressure_worst_memory(p, &w);
    ck_assert(w.tree);
    pressure_free(p);
    close(cg);
    close(proc);
    /* no pressure files at all: no object, no counters */
    char empty[256];
    snprintf(empty, sizeof empty, "%s/cg", dir);
    int e = open(empty, O_PATH | O_DIRECTORY);
    struct got g2 = {0};
    struct marker_sink sink2 = {.marker = got_marker, .state = got_state, .ctx = &g2};
    unlink(strcat(empty, "/memory.pressure"));
    snprintf(empty, sizeof empty, "%s/cg/cpu.pressure", dir);
    unlink(empty);
    snprintf(empty, sizeof empty, "%s/cg/io.pressure", dir);
    unlink(empty);
    ck_assert_int_eq(pressure_new(e, -1, &sink2, &p), 0);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(g2.states, 0);
    close(e);
}
END_TEST

START_TEST(test_limits_check_sampled)
{
    struct limits_config cfg = {.memory = 64 << 20, .cpu_ns = 2 * NSEC_PER_SEC, .tasks = 16};
    struct limits *l;
    ck_assert_int_eq(limits_new(&cfg, NULL, &l), 0);
    ck_assert_uint_eq(limits_by_kernel(l), 0);
    char text[160], how[512];
    limits_describe(l, how, sizeof how);
    ck_assert_ptr_nonnull(strstr(how, "memory 64 MiB: the tree's summed RSS checked at each sample"));
    ck_assert_ptr_nonnull(strstr(how, "cpu 2 s: the tree's CPU time checked at each sample and on a timer"));
    ck_assert_ptr_nonnull(strstr(how, "tasks 16: processes and threads counted at each sample"));
    ck_assert_ptr_nonnull(strstr(how, "RLIMIT_NPROC"));
    struct limits_reading r = {.cpu_ns = NSEC_PER_SEC, .rss_known = true, .rss = 64 << 20, .count_known = true,
                               .tasks = 16};
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_NONE); /* at each limit, not past */
    r.rss = (64 << 20) + 1;
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_MEMORY);
    /* in binary units, and as the memory graphs show them (decimal MB) */
    ck_assert_str_eq(text, "the tree's RSS reached 64.0 MiB (67.1 MB), past the limit of 64 MiB (67.1 MB)");
    r.rss = 100 << 20;
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_MEMORY);
    ck_assert_str_eq(text, "the tree's RSS reached 100 MiB (105 MB), past the limit of 64 MiB (67.1 MB)");
    r.rss_known = false; /* an unknown RSS is no reason */
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_NONE);
    r.cpu_ns = 2 * NSEC_PER_SEC; /* CPU: reaching it is enough */
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_CPU);
    ck_assert_str_eq(text, "the tree used 2 s of CPU time, the limit is 2 s");
    r.cpu_ns = 0;
    r.tasks = 17;
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_TASKS);
    ck_assert_str_eq(text, "the tree had 17 processes and threads, the limit is 16");
    r.count_known = false;
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_NONE);
    /* the CPU deadline: what is left over every CPU, never sooner than 10 ms */
    ck_assert_uint_eq(limits_cpu_deadline(l, 1000, 0, 2), 1000 + NSEC_PER_SEC);
    ck_assert_uint_eq(limits_cpu_deadline(l, 1000, NSEC_PER_SEC, 4), 1000 + NSEC_PER_SEC / 4);
    ck_assert_uint_eq(limits_cpu_deadline(l, 1000, 3 * NSEC_PER_SEC, 1), 1000 + 10 * NSEC_PER_MSEC);
    limits_free(l);
    /* none set: nothing to say, nothing reached, no deadline */
    struct limits_config none = {0};
    ck_assert_int_eq(limits_new(&none, NULL, &l), 0);
    limits_describe(l, how, sizeof how);
    ck_assert_str_eq(how, "");
    r = (struct limits_reading){.cpu_ns = UINT64_MAX, .rss_known = true, .rss = UINT64_MAX};
    ck_assert_int_eq(limits_check(l, &r, text, sizeof text), LIMIT_NONE);
    ck_assert_uint_eq(limits_cpu_deadline(l, 5, 0, 2), UINT64_MAX);
    limits_free(l);
}
END_TEST

static struct sampler_killed death(pid_t pid, const char *cmd)
{
    struct sampler_killed k = {.pid = pid, .end_ns = now_ns(), .rss = 300 << 20, .max_rss = 310 << 20};
    snprintf(k.cmd, sizeof k.cmd, "%s", cmd);
    return k;
}

START_TEST(test_oom_attribution)
{
    setup();
    char vm[256];
    snprintf(vm, sizeof vm, "%s/vmstat", dir);
    put("vmstat", "nr_free_pages 1000\noom_kill 5\nnr_foo 2\n");
    struct limits_config cfg = {.vmstat = vm};
    struct limits *l;
    ck_assert_int_eq(limits_new(&cfg, NULL, &l), 0);
    struct sampler_killed out[4];
    uint64_t now = now_ns();
    /* a KILL with no rise of the count: someone's SIGKILL, decided after 2 s */
    struct sampler_killed a = death(100, "helper alloc 300");
    limits_note_death(l, &a, false);
    ck_assert_uint_eq(limits_oom_take(l, now, out, 4), 0);
    ck_assert_uint_eq(limits_oom_take(l, now + 3 * NSEC_PER_SEC, out, 4), 0);
    /* the count rose: the death noted is the OOM killer's */
    put("vmstat", "nr_free_pages 1000\noom_kill 6\nnr_foo 2\n");
    struct sampler_killed b = death(101, "helper alloc 400");
    limits_note_death(l, &b, false);
    size_t n = limits_oom_take(l, now, out, 4);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(out[0].pid, 101);
    ck_assert_str_eq(out[0].cmd, "helper alloc 400");
    /* a death after resmon-run's own KILL is its own, whatever the count does */
    put("vmstat", "oom_kill 7\n");
    struct sampler_killed c = death(102, "x");
    limits_note_death(l, &c, true);
    ck_assert_uint_eq(limits_oom_take(l, now, out, 4), 0);
    /* a rise with no death to explain (another process of the machine) credits nothing later */
    put("vmstat", "oom_kill 9\n");
    ck_assert_uint_eq(limits_oom_take(l, now + 20 * NSEC_PER_SEC, out, 4), 0);
    struct sampler_killed d = death(103, "y");
    limits_note_death(l, &d, false);
    ck_assert_uint_eq(limits_oom_take(l, now + 21 * NSEC_PER_SEC, out, 4), 0);
    /* two victims, one rise of two */
    put("vmstat", "oom_kill 11\n");
    struct sampler_killed e = death(104, "e"), f = death(105, "f");
    limits_note_death(l, &e, false);
    limits_note_death(l, &f, false);
    n = limits_oom_take(l, now + 21 * NSEC_PER_SEC, out, 4);
    ck_assert_uint_ge(n, 2);
    limits_free(l);
}
END_TEST

START_TEST(test_oom_payload)
{
    struct sampler_killed k = death(4242, "python -m pytest tests/test_big.py");
    struct jsonw w;
    jsonw_init(&w);
    limits_oom_payload(&w, &k, "tests/test_big.py::test_huge");
    ck_assert(!jsonw_failed(&w));
    cJSON *d = cJSON_Parse(w.buf);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(cJSON_GetObjectItem(d, "type")->valuestring, "OomKill");
    ck_assert_int_eq(cJSON_GetObjectItem(d, "pid")->valueint, 4242);
    ck_assert_str_eq(cJSON_GetObjectItem(d, "cmd")->valuestring, "python -m pytest tests/test_big.py");
    ck_assert_double_eq(cJSON_GetObjectItem(d, "rss")->valuedouble, 300 << 20);
    ck_assert_double_eq(cJSON_GetObjectItem(d, "maxRSS")->valuedouble, 310 << 20);
    ck_assert_str_eq(cJSON_GetObjectItem(d, "test")->valuestring, "tests/test_big.py::test_huge");
    ck_assert_str_eq(cJSON_GetObjectItem(d, "color")->valuestring, "red");
    /* every key is a field of the schema */
    cJSON *it;
    cJSON_ArrayForEach(it, d)
    {
        if (strcmp(it->string, "type"))
            ck_assert_int_ge(marker_type_field(&limits_oom_type, it->string, strlen(it->string)), 0);
    }
    cJSON_Delete(d);
    jsonw_release(&w);
    ck_assert_str_eq(limit_name(LIMIT_MEMORY), "memory");
    ck_assert_str_eq(limit_name(LIMIT_CPU), "cpu");
    ck_assert_str_eq(limit_name(LIMIT_TASKS), "tasks");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 10);
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_pressure_markers_and_warning);
    tcase_add_test(tc, test_pressure_tree_speaks_for_the_tree);
    tcase_add_test(tc, test_limits_check_sampled);
    tcase_add_test(tc, test_oom_attribution);
    tcase_add_test(tc, test_oom_payload);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}

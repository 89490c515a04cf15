/* perfherder.c — see perfherder.h. */
#include "report/perfherder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/outfile.h"
#include "base/util.h"
#include "report/results.h"

bool perfherder_active(const char *moz_automation_env)
{
    return moz_automation_env && *moz_automation_env;
}

static void subtest(struct jsonw *w, const char *name, double value, int decimals)
{
    if (isnan(value))
        return;
    jsonw_obj_open(w);
    jsonw_kv_str(w, "name", name);
    jsonw_kv_double(w, "value", value, decimals);
    jsonw_obj_close(w);
}

static double peak(const struct results *r, enum rs_series k)
{
    double m = NAN;
    for (size_t i = 0; i < r->series[k].n; i++)
        m = isnan(m) ? r->series[k].p[i].v : MAX(m, r->series[k].p[i].v);
    return m;
}

int perfherder_format(const struct results *r, const char *name, double end_ms, char **ret, size_t *ret_len)
{
    int rc = results_ready(r, &end_ms);
    if (rc < 0)
        return rc;
    if (!name || !*name)
        name = r->product ? r->product : "resmon-run";
    struct jsonw w;
    jsonw_init(&w);
    jsonw_obj_open(&w);
    jsonw_key(&w, "framework");
    jsonw_obj_open(&w);
    jsonw_kv_str(&w, "name", "job_resource_usage");
    jsonw_obj_close(&w);
    jsonw_key(&w, "suites");
    jsonw_arr_open(&w);

    jsonw_obj_open(&w);
    char *suite = NULL;
    if (asprintf(&suite, "%s.overall", name) < 0)
        suite = NULL;
    jsonw_kv_str(&w, "name", suite ? suite : "overall");
    free(suite);
    jsonw_key(&w, "extraOptions");
    jsonw_arr_open(&w);
    jsonw_arr_close(&w);
    jsonw_key(&w, "subtests");
    jsonw_arr_open(&w);
    subtest(&w, "cpu_percent", results_series_mean(r, RS_CPU_BUSY, 0, end_ms) * 100, 2);
    if (r->series[RS_IO_WRITE].n) {
        subtest(&w, "io_write_bytes", results_series_sum(r, RS_IO_WRITE), 0);
        subtest(&w, "io.read_bytes", results_series_sum(r, RS_IO_READ), 0);
    }
    if (r->series[RS_IO_WRITE_TIME].n) { /* streams of older versions have no times */
        subtest(&w, "io_write_time", results_series_sum(r, RS_IO_WRITE_TIME), 0);
        subtest(&w, "io_read_time", results_series_sum(r, RS_IO_READ_TIME), 0);
    }
    if (r->series[RS_TREE_CPU].n)
        subtest(&w, "tree_cpu_time", results_series_sum(r, RS_TREE_CPU) / 1000, 3);
    subtest(&w, "tree_max_rss", peak(r, RS_TREE_RSS), 0);
    if (r->series[RS_TREE_IO_WRITE].n) {
        subtest(&w, "tree_io_write_bytes", results_series_sum(r, RS_TREE_IO_WRITE), 0);
        subtest(&w, "tree_io_read_bytes", results_series_sum(r, RS_TREE_IO_READ), 0);
    }
    jsonw_arr_close(&w);
    jsonw_obj_close(&w);

    for (size_t i = 0; i < r->nphases; i++) {
        const struct rs_phase *ph = &r->phases[i];
        jsonw_obj_open(&w);
        if (asprintf(&suite, "%s.%s", name, ph->name) < 0)
            suite = NULL;
        jsonw_kv_str(&w, "name", suite ? suite : ph->name);
        free(suite);
        jsonw_key(&w, "subtests");
        jsonw_arr_open(&w);
        subtest(&w, "time", (ph->end_ms - ph->start_ms) / 1000, 3);
        subtest(&w, "cpu_percent", results_series_mean(r, RS_CPU_BUSY, ph->start_ms, ph->end_ms) * 100, 2);
        jsonw_arr_close(&w);
        jsonw_obj_close(&w);
    }
    jsonw_arr_close(&w);
    jsonw_obj_close(&w);
    if (jsonw_failed(&w)) {
        jsonw_release(&w);
        return -ENOMEM;
    }
    *ret_len = w.len;
    *ret = w.buf; /* the writer's buffer, handed over */
    return 0;
}

struct fill {
    const struct results *r;
    const char *name;
    double end_ms;
};

static int fill_perfherder(void *ctx, int fd)
{
    struct fill *f = ctx;
    char *text;
    size_t len;
    int r = perfherder_format(f->r, f->name, f->end_ms, &text, &len);
    if (r < 0)
        return r;
    r = write_all(fd, text, len);
    free(text);
    return r;
}

int perfherder_finalize(const struct results *r, const char *name, int dirfd, const char *path, double end_ms)
{
    struct fill f = {r, name, end_ms};
    return write_file_atomically(dirfd, path, fill_perfherder, &f, NULL);
}

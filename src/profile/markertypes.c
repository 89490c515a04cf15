/* markertypes.c — see markertypes.h. */
#include "profile/markertypes.h"

#include <string.h>

#include "base/util.h"
#include "observe/forensics.h"
#include "observe/limits.h"
#include "observe/pressure.h"
#include "observe/sampler.h"
#include "profile/runmarks.h"
#include "profile/usermark.h"
#include "testlog/testlog.h"

/* meta.markerSchema order: upstream's types first, as mozsystemmonitor lists them. */
static const struct marker_type *const types[] = {
    &sampler_cpu_type,
    &usermark_phase_type,
    &marker_text_type,
    &testlog_test_type,
    &testlog_status_type,
    &testlog_result_type,
    &testlog_crash_type,
    &sampler_mem_type,
    &sampler_io_type,
    &sampler_netio_type,
    &sampler_process_type,
    &sampler_interval_type,
    &sampler_treecpu_type,
    &sampler_treemem_type,
    &sampler_treeio_type,
    &sampler_treecount_type,
    &pressure_type,
    &limits_oom_type,
    &testlog_logprocess_type,
    &testlog_totals_type,
    &runmarks_command_type,
    &runmarks_timeout_type,
    &runmarks_killstep_type,
    &runmarks_finalize_type,
    &forensics_dump_type,
    &marker_warning_type,
};

const struct marker_type *const *marker_types(size_t *ret_n)
{
    *ret_n = ARRAY_SIZE(types);
    return types;
}

const struct marker_type *marker_type_find(const char *name, size_t len)
{
    for (size_t i = 0; i < ARRAY_SIZE(types); i++)
        if (strlen(types[i]->name) == len && memcmp(types[i]->name, name, len) == 0)
            return types[i];
    return NULL;
}

static void kv_opt(struct jsonw *w, const char *key, const char *s)
{
    if (s)
        jsonw_kv_str(w, key, s);
}

static void write_schema(struct jsonw *w, const struct marker_type *t)
{
    jsonw_obj_open(w);
    jsonw_kv_str(w, "name", t->name);
    kv_opt(w, "tooltipLabel", t->tooltip_label);
    kv_opt(w, "tableLabel", t->table_label);
    kv_opt(w, "chartLabel", t->chart_label);
    jsonw_key(w, "display");
    jsonw_raw(w, t->display, strlen(t->display));
    kv_opt(w, "colorField", t->color_field);
    kv_opt(w, "description", t->description);
    jsonw_key(w, "data");
    jsonw_arr_open(w);
    for (size_t i = 0; i < t->nfields; i++) {
        const struct marker_field *f = &t->fields[i];
        jsonw_obj_open(w);
        jsonw_kv_str(w, "key", f->key);
        kv_opt(w, "label", f->label);
        if (f->format && f->format[0] == '{') {
            jsonw_key(w, "format");
            jsonw_raw(w, f->format, strlen(f->format));
        } else
            kv_opt(w, "format", f->format);
        if (f->flags & MF_HIDDEN)
            jsonw_kv_bool(w, "hidden", true);
        jsonw_obj_close(w);
    }
    jsonw_arr_close(w);
    if (t->graphs) {
        jsonw_key(w, "graphs");
        jsonw_raw(w, t->graphs, strlen(t->graphs));
    }
    jsonw_obj_close(w);
}

void marker_schemas_write(struct jsonw *w)
{
    jsonw_arr_open(w);
    for (size_t i = 0; i < ARRAY_SIZE(types); i++)
        write_schema(w, types[i]);
    jsonw_arr_close(w);
}

/* ---- payloads ------------------------------------------------------------------------------ */


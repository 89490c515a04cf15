/* markers.c — see markers.h: the registry of marker types, the schema writer, the payload builder,
 * and the two types several producers share.
 *
 * The schemas of upstream's types (CPU … Interval) keep mozsystemmonitor's names, labels and
 * fields, so Mozilla's tools read resmon-run's markers as they read upstream's; their definitions
 * live with their owners and add fields (a figure upstream carries without describing it is a
 * hidden field here, so the front-end knows every key).
 */
#include "markers.h"

#include <string.h>

#include "forensics.h"
#include "limits.h"
#include "pressure.h"
#include "runmarks.h"
#include "sampler.h"
#include "testlog.h"
#include "usermark.h"
#include "util.h"

static const struct marker_field text_fields[] = {
    [TEXT_TEXT] = MARKER_FIELD("text", "Description", "string", 0),
};
const struct marker_type marker_text_type = {
    .name = "Text",
    .tooltip_label = "{marker.name}",
    .table_label = "{marker.name} \xe2\x80\x94 {marker.data.text}",
    .chart_label = "{marker.data.text}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .fields = text_fields,
    .nfields = ARRAY_SIZE(text_fields),
};

static const struct marker_field warning_fields[] = {
    [WARNING_MESSAGE] = MARKER_FIELD("message", "Message", "string", 0),
    [WARNING_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type marker_warning_type = {
    .name = "Warning",
    .tooltip_label = "{marker.data.message}",
    .table_label = "{marker.data.message}",
    .chart_label = "{marker.data.message}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .color_field = "color",
    .fields = warning_fields,
    .nfields = ARRAY_SIZE(warning_fields),
};

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

int marker_type_field(const struct marker_type *t, const char *key, size_t len)
{
    for (size_t i = 0; i < t->nfields; i++)
        if (t->fields[i].key_len == len && memcmp(t->fields[i].key, key, len) == 0)
            return (int)i;
    return -1;
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

void mpay_begin(struct mpay *p, struct jsonw *w, const struct marker_type *t)
{
    p->w = w;
    p->t = t;
    jsonw_reset(w);
    jsonw_obj_open(w);
    jsonw_key_plain(w, "type", 4);
    jsonw_str(w, t->name);
}

void mpay_key(struct mpay *p, unsigned field)
{
    if (field >= p->t->nfields) {
        p->w->failed = true;
        return;
    }
    jsonw_key_plain(p->w, p->t->fields[field].key, p->t->fields[field].key_len);
}

void mpay_str(struct mpay *p, unsigned field, const char *s)
{
    mpay_strn(p, field, s ? s : "", s ? strlen(s) : 0);
}

void mpay_strn(struct mpay *p, unsigned field, const char *s, size_t n)
{
    mpay_key(p, field);
    jsonw_strn(p->w, s, n);
}

void mpay_int(struct mpay *p, unsigned field, int64_t v)
{
    mpay_key(p, field);
    jsonw_int(p->w, v);
}

void mpay_uint(struct mpay *p, unsigned field, uint64_t v)
{
    mpay_key(p, field);
    jsonw_uint(p->w, v);
}

void mpay_double(struct mpay *p, unsigned field, double v, int decimals)
{
    mpay_key(p, field);
    jsonw_double(p->w, v, decimals);
}

void mpay_end(struct mpay *p) { jsonw_obj_close(p->w); }

void marker_text_payload(struct jsonw *w, const char *text, size_t len)
{
    struct mpay p;
    mpay_begin(&p, w, &marker_text_type);
    mpay_strn(&p, TEXT_TEXT, text, len);
    mpay_end(&p);
}

/* ---- counters ------------------------------------------------------------------------------ */

void marker_counter_line(struct jsonw *w, const struct marker_counter *c)
{
    static const char *const kinds[] = {[MCOUNT_AMOUNT] = "amount", [MCOUNT_LEVEL] = "level",
                                        [MCOUNT_SHARE] = "share"};
    jsonw_reset(w);
    jsonw_obj_open(w);
    jsonw_kv_str(w, "type", "counter");
    jsonw_kv_str(w, "name", c->name);
    jsonw_kv_str(w, "category", c->category);
    jsonw_kv_str(w, "description", c->description);
    jsonw_kv_str(w, "marker", c->marker);
    jsonw_kv_str(w, "key", c->type->fields[c->field].key);
    jsonw_kv_str(w, "kind", kinds[c->kind]);
    jsonw_key(w, "display");
    jsonw_raw(w, c->display, strlen(c->display));
    jsonw_obj_close(w);
}

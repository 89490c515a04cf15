/* markers.c — see markers.h: the payload builder, and the two types several producers share.
 *
 * The schemas of upstream's types (CPU … Interval) keep mozsystemmonitor's names, labels and
 * fields, so Mozilla's tools read resmon-run's markers as they read upstream's; their definitions
 * live with their owners and add fields (a figure upstream carries without describing it is a
 * hidden field here, so the front-end knows every key).
 */
#include "base/markers.h"

#include <string.h>

#include "base/util.h"

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

int marker_type_field(const struct marker_type *t, const char *key, size_t len)
{
    for (size_t i = 0; i < t->nfields; i++)
        if (t->fields[i].key_len == len && memcmp(t->fields[i].key, key, len) == 0)
            return (int)i;
    return -1;
}

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

/* Unit tests of the marker types (markers.h): every schema is one the front-end can show whole,
 * upstream's schemas keep what mozsystemmonitor's say, counters are declared in the front-end's
 * own terms, and payloads can only hold their schema's keys. */
#include "base/markers.h"
#include "profile/markertypes.h"

#include <check.h>
#include "check_run.h"
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "observe/pressure.h"
#include "observe/sampler.h"
#include "profile/runmarks.h"

/* The formats the front-end knows (its MarkerFormatType), and its graph colours. */
static const char *const formats[] = {"url", "file-path", "sanitized-string", "string", "unique-string",
                                      "flow-id", "terminating-flow-id", "duration", "time", "seconds",
                                      "milliseconds", "microseconds", "nanoseconds", "bytes", "percentage",
                                      "integer", "decimal", "hexadecimal", "pid", "tid", "list"};
static const char *const colors[] = {"blue", "green", "grey", "ink", "magenta", "orange",
                                     "purple", "red", "teal", "yellow"};
/* Data keys the front-end gives a meaning of its own, whatever the schema says. */
static const char *const reserved[] = {"cause", "stack", "innerWindowID", "category", "type"};

static bool in(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

static cJSON *schemas_json(void)
{
    struct jsonw w;
    jsonw_init(&w);
    marker_schemas_write(&w);
    ck_assert(!jsonw_failed(&w));
    cJSON *a = cJSON_Parse(w.buf);
    jsonw_release(&w);
    ck_assert_ptr_nonnull(a);
    return a;
}

/* Every {marker.data.KEY} of a label (and every condition's KEY) names a field of t. */
static void labels_name_fields(const struct marker_type *t, const char *label)
{
    if (!label)
        return;
    for (const char *p = label; (p = strstr(p, "{marker.")); p++) {
        const char *e = strchr(p, '}');
        ck_assert_ptr_nonnull(e);
        if (strncmp(p, "{marker.name}", 13) == 0)
            continue;
        ck_assert_msg(strncmp(p, "{marker.data.", 13) == 0, "%s: label %s", t->name, label);
        const char *k = p + 13; /* the key ends the part, or a condition's key its '?' */
        ck_assert_msg(marker_type_field(t, k, strcspn(k, " ?}")) >= 0, "%s: label %s names no field", t->name,
                      label);
        p = e;
    }
}

START_TEST(test_every_type_shows_whole)
{
    size_t n;
    const struct marker_type *const *types = marker_types(&n);
    ck_assert_uint_ge(n, 20);
    for (size_t i = 0; i < n; i++) {
        const struct marker_type *t = types[i];
        ck_assert_ptr_eq(marker_type_find(t->name, strlen(t->name)), t);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(types[j]->name, t->name) != 0, "two types named %s", t->name);
        for (size_t f = 0; f < t->nfields; f++) {
            const struct marker_field *fd = &t->fields[f];
            ck_assert_uint_eq(fd->key_len, strlen(fd->key));
            /* payloads write keys as they are (mpay_key, jsonw_key_plain) */
            ck_assert_msg(json_plain_prefix(fd->key, fd->key_len) == fd->key_len, "%s: key %s needs escaping",
                          t->name, fd->key);
            ck_assert_msg(!in(fd->key, reserved, ARRAY_SIZE(reserved)), "%s: %s is a key the front-end reserves",
                          t->name, fd->key);
            ck_assert_int_eq(marker_type_field(t, fd->key, fd->key_len), (int)f); /* unique */
            if (!(fd->flags & MF_HIDDEN))
                ck_assert_msg(fd->label && fd->format, "%s.%s: a shown field needs a label and a format",
                              t->name, fd->key);
            if (fd->format && fd->format[0] == '{') {
                cJSON *fmt = cJSON_Parse(fd->format);
                ck_assert_ptr_nonnull(fmt);
                ck_assert_str_eq(cJSON_GetObjectItem(fmt, "type")->valuestring, "table");
                cJSON *col;
                cJSON_ArrayForEach(col, cJSON_GetObjectItem(fmt, "columns"))
                    ck_assert(in(cJSON_GetObjectItem(col, "type")->valuestring, formats, ARRAY_SIZE(formats)));
                cJSON_Delete(fmt);
            } else if (fd->format)
                ck_assert_msg(in(fd->format, formats, ARRAY_SIZE(formats)), "%s.%s: format %s", t->name, fd->key,
                              fd->format);
        }
        labels_name_fields(t, t->tooltip_label);
        labels_name_fields(t, t->table_label);
        labels_name_fields(t, t->chart_label);
        if (t->color_field)
            ck_assert_int_ge(marker_type_field(t, t->color_field, strlen(t->color_field)), 0);
        if (t->graphs) {
            cJSON *g = cJSON_Parse(t->graphs), *e;
            ck_assert_ptr_nonnull(g);
            cJSON_ArrayForEach(e, g)
            {
                const char *k = cJSON_GetObjectItem(e, "key")->valuestring;
                ck_assert_int_ge(marker_type_field(t, k, strlen(k)), 0);
                ck_assert(in(cJSON_GetObjectItem(e, "color")->valuestring, colors, ARRAY_SIZE(colors)));
            }
            cJSON_Delete(g);
        }
    }
}
END_TEST

static const cJSON *named(const cJSON *a, const char *name)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, a) if (strcmp(cJSON_GetObjectItem(s, "name")->valuestring, name) == 0) return s;
    return NULL;
}

static const char *str_or_null(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool same(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* Upstream's schemas (the meta line mozsystemmonitor writes) stay what they were: the same
 * labels, display and fields; added fields only. Two changes, on purpose: the graphs of CPU and
 * Mem, which counters draw now, and Phase's table label, which named CPU fields a phase may lack. */
START_TEST(test_upstream_schemas_kept)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/moz/stream-complete.jsonl", SRCDIR);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char line[1 << 20];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    cJSON *meta = cJSON_Parse(line);
    ck_assert_ptr_nonnull(meta);
    const cJSON *theirs = cJSON_GetObjectItem(meta, "markerSchema");
    cJSON *ours = schemas_json();
    static const char *const kept[] = {"CPU", "Phase", "Text", "Test", "TestStatus", "Crash",
                                       "Mem", "IO", "NetIO", "Process", "Interval"};
    for (size_t i = 0; i < ARRAY_SIZE(kept); i++) {
        const cJSON *t = named(theirs, kept[i]), *o = named(ours, kept[i]);
        ck_assert_msg(t && o, "%s", kept[i]);
        static const char *const labels[] = {"tooltipLabel", "tableLabel", "chartLabel", "colorField"};
        for (size_t k = 0; k < ARRAY_SIZE(labels); k++) {
            if (!strcmp(kept[i], "Phase") && !strcmp(labels[k], "tableLabel"))
                continue;
            ck_assert_msg(same(str_or_null(t, labels[k]), str_or_null(o, labels[k])), "%s.%s", kept[i], labels[k]);
        }
        ck_assert(cJSON_Compare(cJSON_GetObjectItem(t, "display"), cJSON_GetObjectItem(o, "display"), true));
        const cJSON *tf;
        cJSON_ArrayForEach(tf, cJSON_GetObjectItem(t, "data"))
        {
            const char *key = str_or_null(tf, "key");
            const cJSON *of = NULL, *x;
            cJSON_ArrayForEach(x, cJSON_GetObjectItem(o, "data")) if (same(str_or_null(x, "key"), key)) of = x;
            ck_assert_msg(of != NULL, "%s lost upstream's field %s", kept[i], key);
            ck_assert_msg(cJSON_Compare(tf, of, true), "%s.%s differs from upstream's", kept[i], key);
        }
        bool counted = !strcmp(kept[i], "CPU") || !strcmp(kept[i], "Mem");
        if (counted)
            ck_assert_msg(!cJSON_GetObjectItem(o, "graphs"), "%s: a counter draws it, and its graph too", kept[i]);
        else
            ck_assert_msg((!cJSON_GetObjectItem(t, "graphs") && !cJSON_GetObjectItem(o, "graphs")) ||
                              cJSON_Compare(cJSON_GetObjectItem(t, "graphs"), cJSON_GetObjectItem(o, "graphs"), true),
                          "%s: graphs differ from upstream's", kept[i]);
    }
    cJSON_Delete(ours);
    cJSON_Delete(meta);
}
END_TEST

/* Counters in the front-end's terms; each reads a numeric field of its markers' type, and no type
 * a counter draws has a marker graph of its own. */
START_TEST(test_counters)
{
    size_t ns, np;
    const struct marker_counter *const *sc = sampler_counters(&ns), *const *pc = pressure_counters(&np);
    ck_assert_uint_eq(ns, 5);
    ck_assert_uint_eq(np, 6);
    const struct marker_counter *cs[16];
    size_t n = 0;
    for (size_t i = 0; i < ns; i++)
        cs[n++] = sc[i];
    for (size_t i = 0; i < np; i++)
        cs[n++] = pc[i];
    /* one name each: the converter keeps the first definition of a name */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            ck_assert_str_ne(cs[i]->name, cs[j]->name);
    static const char *const sources[] = {"count", "rate", "cpu-ratio", "accumulated", "count-range",
                                          "selection-total", "selection-rate", "committed-range-total",
                                          "sample-number"};
    static const char *const units[] = {"bytes", "bytes-per-second", "percent", "number"};
    static const char *const numeric[] = {"duration", "bytes", "percentage", "integer", "decimal"};
    for (size_t i = 0; i < n; i++) {
        const struct marker_counter *c = cs[i];
        ck_assert_uint_lt(c->field, c->type->nfields);
        ck_assert_msg(in(c->type->fields[c->field].format, numeric, ARRAY_SIZE(numeric)), "%s", c->name);
        ck_assert_msg(c->type->graphs == NULL, "%s: its type has a marker graph", c->name);
        cJSON *d = cJSON_Parse(c->display);
        ck_assert_ptr_nonnull(d);
        const char *g = cJSON_GetObjectItem(d, "graphType")->valuestring;
        ck_assert(!strcmp(g, "line-rate") || !strcmp(g, "line-accumulated"));
        /* a level is drawn as the sum of its changes; amounts and shares as rates */
        ck_assert_int_eq(!strcmp(g, "line-accumulated"), c->kind == MCOUNT_LEVEL);
        ck_assert(in(cJSON_GetObjectItem(d, "color")->valuestring, colors, ARRAY_SIZE(colors)));
        /* the track's name: the counter's, or one that says whose it is ("Machine CPU"); no two
         * tracks share a name or a place in the order */
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(d, "label")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(d, "sortWeight")));
        for (size_t j = 0; j < i; j++) {
            cJSON *e = cJSON_Parse(cs[j]->display);
            ck_assert_str_ne(cJSON_GetObjectItem(e, "label")->valuestring,
                             cJSON_GetObjectItem(d, "label")->valuestring);
            ck_assert(cJSON_GetObjectItem(e, "sortWeight")->valuedouble !=
                      cJSON_GetObjectItem(d, "sortWeight")->valuedouble);
            cJSON_Delete(e);
        }
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(d, "markerSchemaLocation")));
        cJSON *row;
        int values = 0;
        cJSON_ArrayForEach(row, cJSON_GetObjectItem(d, "tooltipRows"))
        {
            if (!strcmp(cJSON_GetObjectItem(row, "type")->valuestring, "separator"))
                continue;
            values++;
            ck_assert(in(cJSON_GetObjectItem(row, "source")->valuestring, sources, ARRAY_SIZE(sources)));
            ck_assert(in(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "format"), "unit")->valuestring, units,
                         ARRAY_SIZE(units)));
            ck_assert(cJSON_IsString(cJSON_GetObjectItem(row, "label")));
        }
        ck_assert_int_gt(values, 0);
        cJSON_Delete(d);
        /* the definition line the converter reads */
        struct jsonw w;
        jsonw_init(&w);
        marker_counter_line(&w, c);
        cJSON *l = cJSON_Parse(w.buf);
        ck_assert_ptr_nonnull(l);
        ck_assert_str_eq(cJSON_GetObjectItem(l, "type")->valuestring, "counter");
        ck_assert_str_eq(cJSON_GetObjectItem(l, "key")->valuestring, c->type->fields[c->field].key);
        ck_assert_str_eq(cJSON_GetObjectItem(l, "marker")->valuestring, c->marker);
        cJSON_Delete(l);
        jsonw_release(&w);
    }
}
END_TEST

/* A stop for a limit the kernel enforced after the OOM killer ended the command: nothing was
 * signalled and nothing was alive, so the stop says so and leaves the empty table out. */
START_TEST(test_stop_after_the_kernel)
{
    struct jsonw w;
    jsonw_init(&w);
    struct runmarks_stop st = {.reason = RUN_MEMORY, .limit = "the tree's RSS reached 300 MiB", .figure = "256 MiB",
                               .ended = true};
    runmarks_stop_payload(&w, &st);
    ck_assert(!jsonw_failed(&w));
    ck_assert_msg(strstr(w.buf, "\"stop\":\"memory limit 256 MiB\""), "%s", w.buf);
    ck_assert_msg(strstr(w.buf, "\"signal\":\"none (the command had ended)\""), "%s", w.buf);
    ck_assert_msg(!strstr(w.buf, "liveProcesses"), "%s", w.buf);
    /* GNU timeout's -s 0 is a signal sent, not nothing */
    jsonw_release(&w);
    jsonw_init(&w);
    runmarks_stop_payload(&w, &(struct runmarks_stop){.reason = RUN_TIMEOUT, .after_ns = 100000000});
    ck_assert_msg(strstr(w.buf, "\"signal\":\"0\""), "%s", w.buf);
    jsonw_release(&w);
    jsonw_init(&w);
    st.signal = 15;
    st.ended = false;
    runmarks_stop_payload(&w, &st);
    ck_assert_msg(strstr(w.buf, "\"signal\":\"TERM\""), "%s", w.buf);
    jsonw_release(&w);
}
END_TEST

/* A payload holds its schema's keys and nothing else: a field index out of range fails it. */
START_TEST(test_payload_builder)
{
    struct jsonw w;
    jsonw_init(&w);
    struct mpay p;
    mpay_begin(&p, &w, &marker_warning_type);
    mpay_str(&p, WARNING_MESSAGE, "disk \"full\"");
    mpay_str(&p, WARNING_COLOR, "orange");
    mpay_end(&p);
    ck_assert(!jsonw_failed(&w));
    ck_assert_str_eq(w.buf, "{\"type\":\"Warning\",\"message\":\"disk \\\"full\\\"\",\"color\":\"orange\"}");
    mpay_begin(&p, &w, &marker_warning_type);
    mpay_uint(&p, 7, 1);
    ck_assert(jsonw_failed(&w));
    jsonw_release(&w);
    jsonw_init(&w);
    marker_text_payload(&w, "a\0b", 3);
    ck_assert_str_eq(w.buf, "{\"type\":\"Text\",\"text\":\"a\\u0000b\"}");
    jsonw_release(&w);
}
END_TEST

/* A label rendered as the front-end does (its parseLabel): {marker.name}, {marker.data.KEY} (the
 * value, "" when absent) and {marker.data.KEY ? 'A' : 'B'} (A when the key is there); every
 * present field stands for "1" (an integer one makes "1 processes" visible) or "v". */
static void render(const struct marker_type *t, const char *label, unsigned present, char *out, size_t size)
{
    size_t o = 0;
    out[0] = '\0';
    for (const char *p = label; *p && o + 1 < size;) {
        if (*p != '{') {
            out[o++] = *p++;
            continue;
        }
        const char *end = strchr(p, '}');
        ck_assert_msg(end != NULL, "%s: label %s", t->name, label);
        char part[200];
        snprintf(part, sizeof part, "%.*s", (int)(end - p - 1), p + 1);
        p = end + 1;
        const char *text = "";
        char *q = strchr(part, '?');
        if (q) {
            *q = '\0';
            char *a = strchr(q + 1, '\''), *a2 = a ? strchr(a + 1, '\'') : NULL;
            char *b = a2 ? strchr(a2 + 1, '\'') : NULL, *b2 = b ? strchr(b + 1, '\'') : NULL;
            ck_assert_msg(b2 != NULL, "%s: ternary %s", t->name, label);
            *a2 = *b2 = '\0';
            char *key = strtok(part, " ");
            ck_assert_msg(key && !strncmp(key, "marker.data.", 12), "%s: %s", t->name, label);
            int k = marker_type_field(t, key + 12, strlen(key + 12));
            ck_assert_msg(k >= 0, "%s: the label's %s is no field", t->name, key);
            text = (present >> k) & 1 ? a + 1 : b + 1;
        } else if (!strcmp(part, "marker.name"))
            text = "NAME";
        else {
            ck_assert_msg(!strncmp(part, "marker.data.", 12), "%s: %s", t->name, label);
            int k = marker_type_field(t, part + 12, strlen(part + 12));
            ck_assert_msg(k >= 0, "%s: the label's %s is no field", t->name, part);
            const char *fmt = t->fields[k].format;
            text = !((present >> k) & 1) ? "" : fmt && !strcmp(fmt, "integer") ? "1" : "v";
        }
        size_t n = MIN(strlen(text), size - 1 - o);
        memcpy(out + o, text, n);
        o += n;
    }
    out[o] = '\0';
}

static bool dangles(const char *s)
{
    static const char *const seps[] = {"\xe2\x80\x94", ":", ",", "(", ")"};
    size_t n = strlen(s);
    if (!n)
        return false;
    if (s[0] == ' ' || s[n - 1] == ' ' || strstr(s, "  ") || strstr(s, "()") || strstr(s, "1 processes") ||
        strstr(s, "1 threads"))
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(seps); i++) {
        size_t l = strlen(seps[i]);
        if (i != 4 && n >= l && !memcmp(s + n - l, seps[i], l)) /* ends with a separator */
            return true;
        if (i != 3 && !memcmp(s, seps[i], MIN(l, n)) && n >= l) /* begins with one */
            return true;
    }
    return false;
}

/* This build's own labels read as sentences whatever optional fields a marker lacks: no dash,
 * colon or comma left dangling, no empty parentheses, no "1 processes". (Upstream's types keep
 * upstream's labels.) */
START_TEST(test_labels_read_whole)
{
    static const char *const upstream[] = {"CPU", "Phase", "Text", "Test", "TestStatus", "Crash",
                                           "Mem", "IO", "NetIO", "Process", "Interval"};
    size_t n;
    const struct marker_type *const *types = marker_types(&n);
    size_t checked = 0;
    for (size_t i = 0; i < n; i++) {
        const struct marker_type *t = types[i];
        if (in(t->name, upstream, ARRAY_SIZE(upstream)))
            continue;
        unsigned required = 0, optional[16], nopt = 0;
        for (size_t k = 0; k < t->nfields; k++) {
            if (!(t->fields[k].flags & MF_OPTIONAL))
                required |= 1u << k;
            else if (nopt < ARRAY_SIZE(optional))
                optional[nopt++] = (unsigned)k;
        }
        const char *labels[] = {t->tooltip_label, t->table_label, t->chart_label};
        for (unsigned subset = 0; subset < (1u << nopt); subset++) {
            unsigned present = required;
            for (unsigned j = 0; j < nopt; j++)
                if (subset & (1u << j))
                    present |= 1u << optional[j];
            for (size_t l = 0; l < ARRAY_SIZE(labels); l++) {
                if (!labels[l])
                    continue;
                char out[1024];
                render(t, labels[l], present, out, sizeof out);
                ck_assert_msg(!dangles(out), "%s: label \"%s\" reads \"%s\"", t->name, labels[l], out);
                checked++;
            }
        }
    }
    ck_assert_uint_gt(checked, 100);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("markers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, test_every_type_shows_whole);
    tcase_add_test(tc, test_upstream_schemas_kept);
    tcase_add_test(tc, test_counters);
    tcase_add_test(tc, test_payload_builder);
    tcase_add_test(tc, test_stop_after_the_kernel);
    tcase_add_test(tc, test_labels_read_whole);
    suite_add_tcase(s, tc);
    return check_run(s);
}

/* check-profile — structural checker of resmon-run's output, used by the tests.
 *
 *   check-profile FILE                  validate a full profile (profile-format.md §3–§5)
 *   check-profile --stream [--allow-torn] FILE
 *                                       validate a JSONL stream (§1–§2); --allow-torn accepts a
 *                                       last line cut short (what a killed run leaves)
 *   check-profile --dump FILE           one line per marker: name TAB start TAB end|null TAB
 *                                       category TAB compact-data-json (full profile or stream)
 *   check-profile --count NAME FILE     number of markers named NAME
 *   check-profile --meta KEY FILE       meta.KEY (strings raw, other values as compact JSON)
 *   check-profile --samples FILE        one line per sample of the threads after the run's own
 *                                       (the processes dumped at a stop, and sampled): pid TAB
 *                                       the stack's frames from the innermost out, joined by
 *                                       " < " (a dumped thread's root, "thread TID NAME", last)
 *   check-profile --sample-times FILE   the same, each line ending in TAB the sample's time
 *   check-profile --threads FILE        one line per thread after the run's own: pid, tid, name,
 *                                       process start, thread start, its stacks' category (as
 *                                       the front-end takes it: the frame's), first sample's time
 *                                       (--samples and the category leave out the dump's sample
 *                                       for the time before a thread's first stack)
 *   check-profile --schemas             the marker types of this build (markers.h) as JSON:
 *                                       {"Type":{"fields":[...],"optional":[...]},...}
 *
 * Validation also holds every marker's payload to its schema: its type has one, every key of it
 * is a field of that schema, and — in resmon-run's own profiles (meta.resmonVersion) — the
 * schemas are exactly this build's and every required field (markers.h) is there. Counters are
 * checked too: one sample group each, times in order, as many counts as times.
 *
 * Exit 0: valid (or the query answered), 1: invalid, with a message naming what is wrong, 2: usage.
 * Query modes accept a full profile or a stream (detected by the {"type":"meta" prefix).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/markers.h"
#include "profile/markertypes.h"

static const char *file_name = "";

/* meta.markerSchema of the file being checked, and whether it is one of resmon-run's own. */
static const cJSON *schemas;
static bool own_profile;

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "check-profile: %s: ", file_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

static char *read_all(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap + 1);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            char *p = realloc(buf, (cap *= 2) + 1);
            if (!p) {
                free(buf);
                buf = NULL;
            } else
                buf = p;
        }
    }
    fclose(f);
    if (buf) {
        buf[len] = '\0';
        *ret_len = len;
    }
    return buf;
}

/* Offset of the first invalid UTF-8 byte, or len (RFC 3629: no overlongs, surrogates, > U+10FFFF). */
static size_t utf8_check(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            n = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else
            return i;
        if (len - i < n || s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k < n; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return i;
        i += n;
    }
    return len;
}

static void print_ms(double v)
{
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%.3f", v);
    while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
        n--;
    fwrite(buf, 1, (size_t)n, stdout);
}

static bool is_int(const cJSON *x) { return cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble); }

/* ---- meta --------------------------------------------------------------------------------- */

static int check_meta(const cJSON *meta, bool full, int *ret_ncat)
{
    static const struct {
        const char *key;
        char kind; /* n number, s string, b bool, a array */
    } req[] = {
        {"processType", 'n'}, {"product", 's'}, {"stackwalk", 'n'}, {"version", 'n'},
        {"preprocessedProfileVersion", 'n'}, {"symbolicationNotSupported", 'b'}, {"interval", 'n'},
        {"startTime", 'n'}, {"profilingStartTime", 'n'}, {"logicalCPUs", 'n'}, {"physicalCPUs", 'n'},
        {"mainMemory", 'n'}, {"categories", 'a'}, {"markerSchema", 'a'}, {"usesOnlyOneStackType", 'b'},
    };
    if (!cJSON_IsObject(meta))
        return fail("meta is not an object");
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, req[i].key);
        bool ok = v && (req[i].kind == 'n'   ? cJSON_IsNumber(v)
                        : req[i].kind == 's' ? cJSON_IsString(v)
                        : req[i].kind == 'b' ? cJSON_IsBool(v)
                                             : cJSON_IsArray(v));
        if (!ok)
            return fail("meta.%s missing or of the wrong type", req[i].key);
    }
    const cJSON *pet = cJSON_GetObjectItemCaseSensitive(meta, "profilingEndTime");
    if (full && !cJSON_IsNumber(pet))
        return fail("meta.profilingEndTime missing or not a number");
    if (!full && pet)
        return fail("stream meta line has profilingEndTime");
    if (cJSON_GetObjectItemCaseSensitive(meta, "version")->valuedouble != 27 ||
        cJSON_GetObjectItemCaseSensitive(meta, "preprocessedProfileVersion")->valuedouble != 47)
        return fail("meta.version/preprocessedProfileVersion are not 27/47");
    const cJSON *cats = cJSON_GetObjectItemCaseSensitive(meta, "categories"), *c;
    int ncat = 0;
    cJSON_ArrayForEach(c, cats)
    {
        const cJSON *sub = cJSON_GetObjectItemCaseSensitive(c, "subcategories");
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "name")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "color")) || !cJSON_IsArray(sub) ||
            cJSON_GetArraySize(sub) < 1)
            return fail("meta.categories[%d] malformed", ncat);
        ncat++;
    }
    if (ncat < 1)
        return fail("meta.categories is empty");
    const cJSON *s;
    int i = 0;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(meta, "markerSchema"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
        const cJSON *display = cJSON_GetObjectItemCaseSensitive(s, "display");
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(s, "data");
        const cJSON *graphs = cJSON_GetObjectItemCaseSensitive(s, "graphs");
        if (!cJSON_IsString(name) || !cJSON_IsArray(display) || !cJSON_IsArray(data))
            return fail("meta.markerSchema[%d] lacks name/display/data", i);
        const cJSON *f;
        cJSON_ArrayForEach(f, data) if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(f, "key")))
            return fail("meta.markerSchema %s: a data field has no key", name->valuestring);
        if (graphs) {
            if (!cJSON_IsArray(graphs) || cJSON_GetArraySize(graphs) < 1)
                return fail("meta.markerSchema %s: graphs is not a non-empty array", name->valuestring);
            cJSON_ArrayForEach(f, graphs) if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(f, "key")) ||
                                              !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(f, "type")))
                return fail("meta.markerSchema %s: a graph lacks key/type", name->valuestring);
        }
        i++;
    }
    schemas = cJSON_GetObjectItemCaseSensitive(meta, "markerSchema");
    own_profile = cJSON_GetObjectItemCaseSensitive(meta, "resmonVersion") != NULL;
    if (own_profile) {
        /* The schemas are this build's, written from the marker types (markers.h). */
        struct jsonw w;
        jsonw_init(&w);
        marker_schemas_write(&w);
        cJSON *mine = cJSON_Parse(w.buf);
        jsonw_release(&w);
        bool same = mine && cJSON_Compare(mine, schemas, true);
        cJSON_Delete(mine);
        if (!same)
            return fail("meta.markerSchema is not the marker types' schemas");
    }
    *ret_ncat = ncat;
    return 0;
}

static const cJSON *schema_named(const char *name)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, schemas)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return s;
    }
    return NULL;
}

/* The payload against its schema (markers.h: one owner per type). */
static int check_payload(const cJSON *d, const char *name, const char *where)
{
    if (!own_profile)
        return 0; /* another writer's profile (mozsystemmonitor's): only its structure is ours to check */
    const char *type = d->child->valuestring;
    const cJSON *schema = schema_named(type);
    if (!schema)
        return fail("%s (%s): data.type %s has no schema", where, name, type);
    const cJSON *fields = cJSON_GetObjectItemCaseSensitive(schema, "data");
    for (const cJSON *k = d->child->next; k; k = k->next) {
        bool described = false;
        const cJSON *f;
        cJSON_ArrayForEach(f, fields)
        {
            const cJSON *key = cJSON_GetObjectItemCaseSensitive(f, "key");
            described |= cJSON_IsString(key) && strcmp(key->valuestring, k->string) == 0;
        }
        if (!described)
            return fail("%s (%s): data.%s is not a field of schema %s", where, name, k->string, type);
    }
    const struct marker_type *t = marker_type_find(type, strlen(type));
    for (size_t i = 0; t && i < t->nfields; i++)
        if (!(t->fields[i].flags & MF_OPTIONAL) && !cJSON_GetObjectItemCaseSensitive(d, t->fields[i].key))
            return fail("%s (%s): required field %s of %s is missing", where, name, t->fields[i].key, type);
    return 0;
}

/* counters: the processed format of version 47 (one sample group each). */
static int check_counters(const cJSON *counters)
{
    const cJSON *c;
    int i = 0;
    cJSON_ArrayForEach(c, counters)
    {
        const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "sampleGroups"), 0);
        const cJSON *smp = cJSON_GetObjectItemCaseSensitive(g, "samples");
        const cJSON *time = cJSON_GetObjectItemCaseSensitive(smp, "time"),
                    *count = cJSON_GetObjectItemCaseSensitive(smp, "count"),
                    *len = cJSON_GetObjectItemCaseSensitive(smp, "length");
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "name")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "category")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "pid")) ||
            !is_int(cJSON_GetObjectItemCaseSensitive(c, "mainThreadIndex")))
            return fail("counters[%d] lacks name/category/pid/mainThreadIndex", i);
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, "sampleGroups")) != 1 || !is_int(len) ||
            !cJSON_IsArray(time) || !cJSON_IsArray(count) || cJSON_GetArraySize(time) != (int)len->valuedouble ||
            cJSON_GetArraySize(count) != (int)len->valuedouble || len->valuedouble < 1)
            return fail("counters[%d]: not one sample group with time, count and length", i);
        double prev = -INFINITY;
        const cJSON *t, *n = count->child;
        cJSON_ArrayForEach(t, time)
        {
            if (!cJSON_IsNumber(t) || t->valuedouble < prev || !cJSON_IsNumber(n))
                return fail("counters[%d]: samples not numbers in time order", i);
            prev = t->valuedouble;
            n = n->next;
        }
        i++;
    }
    return 0;
}

/* ---- thread ------------------------------------------------------------------------------- */

static int check_table(const cJSON *t, const char *tname, const char *const *cols, int want_len)
{
    if (!cJSON_IsObject(t))
        return fail("thread.%s missing", tname);
    const cJSON *len = cJSON_GetObjectItemCaseSensitive(t, "length");
    if (!is_int(len) || (want_len >= 0 && len->valuedouble != want_len))
        return fail("thread.%s.length wrong", tname);
    for (; *cols; cols++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(t, *cols);
        if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != (int)len->valuedouble)
            return fail("thread.%s.%s missing or not of length %d", tname, *cols, (int)len->valuedouble);
    }
    return 0;
}

static int check_thread_common(const cJSON *th, bool dumped)
{
    if (!cJSON_IsObject(th))
        return fail("thread is not an object");
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(th, "processType")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(th, "processName")) ||
        !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(th, "processStartupTime")) ||
        !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(th, "registerTime")) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(th, "pausedRanges")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(th, "name")) ||
        !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(th, "isMainThread")) ||
        !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(th, "showMarkersInTimeline")))
        return fail("thread lacks processType/processName/processStartupTime/registerTime/pausedRanges/"
                    "name/isMainThread/showMarkersInTimeline");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(th, "pid");
    const cJSON *tid = cJSON_GetObjectItemCaseSensitive(th, "tid");
    if (!dumped && (!cJSON_IsString(pid) || strcmp(pid->valuestring, "0") != 0 || !is_int(tid)))
        return fail("thread.pid must be the string \"0\" and tid a number");
    /* a dumped thread: its process's pid, as a string, and its own tid, the same number for the
     * main thread only (the dump's copy of a main thread also sampled is not: it is named "NAME
     * (at the stop)", profile_stacks.h) */
    const cJSON *main_thread = cJSON_GetObjectItemCaseSensitive(th, "isMainThread");
    const cJSON *tname = cJSON_GetObjectItemCaseSensitive(th, "name");
    const char *at_stop = strstr(tname->valuestring, " (at the stop)");
    bool copy = at_stop && !at_stop[14];
    if (dumped && (!cJSON_IsString(pid) || !is_int(tid) || atof(pid->valuestring) <= 0 || tid->valuedouble <= 0 ||
                   (atof(pid->valuestring) == tid->valuedouble && !copy) != cJSON_IsTrue(main_thread)))
        return fail("a dumped thread: pid must be its process's as a string, tid its own, the same for the main "
                    "thread only");
    const cJSON *x;
    if (!(x = cJSON_GetObjectItemCaseSensitive(th, "processShutdownTime")) || !(cJSON_IsNull(x) || cJSON_IsNumber(x)) ||
        !(x = cJSON_GetObjectItemCaseSensitive(th, "unregisterTime")) || !(cJSON_IsNull(x) || cJSON_IsNumber(x)))
        return fail("thread.processShutdownTime/unregisterTime missing");
    static const char *const samples[] = {"stack", "time", NULL};
    static const char *const stack[] = {"frame", "prefix", "category", "subcategory", NULL};
    static const char *const frame[] = {"address", "inlineDepth", "category", "subcategory", "func", "nativeSymbol",
                                        "innerWindowID", "implementation", "line", "column", NULL};
    static const char *const func[] = {"isJS", "relevantForJS", "name", "resource", "fileName", "lineNumber",
                                       "columnNumber", NULL};
    static const char *const res[] = {"lib", "name", "host", "type", NULL};
    static const char *const nat[] = {"libIndex", "address", "name", "functionSize", NULL};
    int r;
    if ((r = check_table(cJSON_GetObjectItemCaseSensitive(th, "samples"), "samples", samples, -1)) ||
        (r = check_table(cJSON_GetObjectItemCaseSensitive(th, "stackTable"), "stackTable", stack, -1)) ||
        (r = check_table(cJSON_GetObjectItemCaseSensitive(th, "frameTable"), "frameTable", frame, -1)) ||
        (r = check_table(cJSON_GetObjectItemCaseSensitive(th, "funcTable"), "funcTable", func, -1)) ||
        (r = check_table(cJSON_GetObjectItemCaseSensitive(th, "resourceTable"), "resourceTable", res, -1)) ||
        (r = check_table(cJSON_GetObjectItemCaseSensitive(th, "nativeSymbols"), "nativeSymbols", nat, -1)))
        return r;
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "samples"),
                                                         "weightType")))
        return fail("thread.samples.weightType missing");
    return 0;
}

static int check_data(const cJSON *d, const char *where)
{
    if (cJSON_IsNull(d))
        return 0;
    if (!cJSON_IsObject(d))
        return fail("%s: data is neither an object nor null", where);
    const cJSON *t = d->child;
    if (!t || strcmp(t->string, "type") != 0 || !cJSON_IsString(t))
        return fail("%s: data does not start with a string \"type\"", where);
    return 0;
}

static int check_markers(const cJSON *th, int ncat)
{
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(th, "stringArray");
    if (!cJSON_IsArray(sa) || cJSON_GetArraySize(sa) < 1)
        return fail("thread.stringArray missing or empty");
    int nstr = cJSON_GetArraySize(sa);
    const cJSON *s;
    cJSON_ArrayForEach(s, sa) if (!cJSON_IsString(s)) return fail("thread.stringArray holds a non-string");
    if (strcmp(sa->child->valuestring, "(root)") != 0)
        return fail("thread.stringArray[0] is not \"(root)\"");
    /* Interned: no string twice (quadratic only in the number of distinct names). */
    for (const cJSON *a = sa->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (strcmp(a->valuestring, b->valuestring) == 0)
                return fail("thread.stringArray holds \"%s\" twice", a->valuestring);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(th, "markers");
    static const char *const cols[] = {"data", "name", "startTime", "endTime", "phase", "category", "stack", NULL};
    int r = check_table(m, "markers", cols, -1);
    if (r)
        return r;
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(m, "data")->child,
                *name = cJSON_GetObjectItemCaseSensitive(m, "name")->child,
                *st = cJSON_GetObjectItemCaseSensitive(m, "startTime")->child,
                *en = cJSON_GetObjectItemCaseSensitive(m, "endTime")->child,
                *ph = cJSON_GetObjectItemCaseSensitive(m, "phase")->child,
                *cat = cJSON_GetObjectItemCaseSensitive(m, "category")->child,
                *stk = cJSON_GetObjectItemCaseSensitive(m, "stack")->child;
    for (int i = 0; data; i++, data = data->next, name = name->next, st = st->next, en = en->next, ph = ph->next,
             cat = cat->next, stk = stk->next) {
        char where[48];
        snprintf(where, sizeof where, "marker %d", i);
        if (!is_int(name) || name->valuedouble < 0 || name->valuedouble >= nstr)
            return fail("%s: name index out of range", where);
        if (!cJSON_IsNumber(st))
            return fail("%s: startTime not a number", where);
        if (!(cJSON_IsNull(en) || cJSON_IsNumber(en)))
            return fail("%s: endTime neither a number nor null", where);
        if (!is_int(ph) || (ph->valuedouble != (cJSON_IsNull(en) ? 0 : 1)))
            return fail("%s: phase %g does not match endTime", where, cJSON_IsNumber(ph) ? ph->valuedouble : -1);
        if (cJSON_IsNumber(en) && en->valuedouble < st->valuedouble)
            return fail("%s: endTime before startTime", where);
        if (!is_int(cat) || cat->valuedouble < 0 || cat->valuedouble >= ncat)
            return fail("%s: category out of range", where);
        if (!(cJSON_IsNull(stk) || is_int(stk)))
            return fail("%s: stack neither null nor an index", where);
        if ((r = check_data(data, where)))
            return r;
        if (cJSON_IsObject(data) && (r = check_payload(data, cJSON_GetArrayItem(sa, (int)name->valuedouble)->valuestring, where)))
            return r;
    }
    return 0;
}

/* An index column: every value an integer in [0, limit), or null where allowed. */
static int check_indexes(const cJSON *t, const char *tname, const char *col, int limit, bool nullable)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(t, col))
    {
        if (nullable && cJSON_IsNull(v))
            continue;
        if (!is_int(v) || v->valuedouble < 0 || v->valuedouble >= limit)
            return fail("%s.%s holds an index out of range", tname, col);
    }
    return 0;
}

static int table_len(const cJSON *th, const char *name)
{
    return (int)cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, name), "length")->valuedouble;
}

/* A dumped process's thread (profile_stacks.h): samples point into stackTable, whose prefixes
 * come before each stack, frames into frameTable, functions into funcTable, names into its
 * stringArray; no markers. */
static int check_dumped(const cJSON *th, int ncat)
{
    int r;
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(th, "stringArray");
    if (!cJSON_IsArray(sa))
        return fail("a dumped process's thread has no stringArray");
    int nstack = table_len(th, "stackTable"), nframe = table_len(th, "frameTable"), nfunc = table_len(th, "funcTable");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(th, "stackTable");
    if ((r = check_indexes(cJSON_GetObjectItemCaseSensitive(th, "samples"), "samples", "stack", nstack, false)) ||
        (r = check_indexes(st, "stackTable", "frame", nframe, false)) ||
        (r = check_indexes(cJSON_GetObjectItemCaseSensitive(th, "frameTable"), "frameTable", "func", nfunc, false)) ||
        (r = check_indexes(cJSON_GetObjectItemCaseSensitive(th, "funcTable"), "funcTable", "name",
                           cJSON_GetArraySize(sa), false)) ||
        (r = check_indexes(cJSON_GetObjectItemCaseSensitive(th, "funcTable"), "funcTable", "fileName",
                           cJSON_GetArraySize(sa), true)) ||
        (r = check_indexes(cJSON_GetObjectItemCaseSensitive(th, "resourceTable"), "resourceTable", "name",
                           cJSON_GetArraySize(sa), false)) ||
        (r = check_indexes(st, "stackTable", "category", ncat, false)) ||
        (r = check_indexes(cJSON_GetObjectItemCaseSensitive(th, "frameTable"), "frameTable", "category", ncat, true)))
        return r;
    const cJSON *res;
    cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "funcTable"), "resource"))
    {
        if (!is_int(res) || res->valuedouble < -1 || res->valuedouble >= table_len(th, "resourceTable"))
            return fail("funcTable.resource holds an index out of range");
    }
    /* no sample before the thread started */
    const cJSON *reg = cJSON_GetObjectItemCaseSensitive(th, "registerTime"), *tm;
    cJSON_ArrayForEach(tm, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "samples"), "time"))
    {
        if (!cJSON_IsNumber(tm) || tm->valuedouble < reg->valuedouble)
            return fail("a dumped thread has a sample before its registerTime");
    }
    int i = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(st, "prefix"))
    {
        if (!cJSON_IsNull(p) && (!is_int(p) || p->valuedouble < 0 || p->valuedouble >= i))
            return fail("stackTable.prefix[%d] does not come before it", i);
        i++;
    }
    if (!cJSON_GetObjectItemCaseSensitive(th, "samples") || table_len(th, "samples") < 1)
        return fail("a dumped process's thread has no sample");
    if (table_len(th, "markers") != 0)
        return fail("a dumped process's thread has markers");
    return 0;
}

/* The markers of the hidden thread of the tracks at zero are those of marker graphs (a schema
 * with graphs) whose every figure is zero, and the run's thread has none of those types. */
static int check_zero_graphs(const cJSON *root, const cJSON *zth)
{
    const cJSON *sc, *m;
    const char *types[16];
    size_t ntypes = 0;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(zth, "markers"), "data"))
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
        const cJSON *graphs = NULL;
        cJSON_ArrayForEach(sc, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "meta"), "markerSchema"))
        if (cJSON_IsString(type) && !strcmp(cJSON_GetObjectItemCaseSensitive(sc, "name")->valuestring, type->valuestring))
            graphs = cJSON_GetObjectItemCaseSensitive(sc, "graphs");
        if (!cJSON_IsArray(graphs))
            return fail("a marker in the thread of the tracks at zero is no marker graph's");
        const cJSON *g;
        cJSON_ArrayForEach(g, graphs)
        {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, cJSON_GetObjectItemCaseSensitive(g, "key")->valuestring);
            if (cJSON_IsNumber(v) && v->valuedouble != 0)
                return fail("a marker graph with a figure (%s %g) in the thread of the tracks at zero",
                            type->valuestring, v->valuedouble);
        }
        size_t i = 0;
        while (i < ntypes && strcmp(types[i], type->valuestring))
            i++;
        if (i == ntypes && ntypes < 16)
            types[ntypes++] = type->valuestring;
    }
    const cJSON *rm;
    cJSON_ArrayForEach(rm, cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "threads"), 0),
                                                                "markers"),
                               "data"))
    {
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(rm, "type");
        for (size_t i = 0; cJSON_IsString(rt) && i < ntypes; i++)
            if (!strcmp(rt->valuestring, types[i]))
                return fail("markers of %s both in the run's thread and in the hidden one", types[i]);
    }
    return 0;
}

static int check_full(const cJSON *root)
{
    int r, ncat;
    if (!cJSON_IsObject(root))
        return fail("not a JSON object");
    if ((r = check_meta(cJSON_GetObjectItemCaseSensitive(root, "meta"), true, &ncat)))
        return r;
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "libs")) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "counters")))
        return fail("libs/counters missing");
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(root, "threads");
    if (!cJSON_IsArray(threads) || cJSON_GetArraySize(threads) < 1)
        return fail("threads is not an array holding the run's thread");
    if ((r = check_thread_common(threads->child, false)) || (r = check_markers(threads->child, ncat)) ||
        (r = check_counters(cJSON_GetObjectItemCaseSensitive(root, "counters"))))
        return r;
    /* after it, the threads of the processes dumped at a stop, shown with the run's; last, the
     * one of the counters that stayed at zero (profile_write.c, HIDDEN COUNTERS), hidden */
    int nthreads = cJSON_GetArraySize(threads), zero = -1, k = 1, zero_markers = 0;
    for (const cJSON *th = threads->child->next; th; th = th->next, k++) {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(th, "pid");
        if (cJSON_IsString(pid) && !strcmp(pid->valuestring, "zero")) {
            if (th->next || table_len(th, "samples") != 0 ||
                !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(th, "isMainThread")))
                return fail("the thread of the tracks at zero is not the last, or has samples");
            if ((r = check_markers(th, ncat)) || (r = check_zero_graphs(root, th)))
                return r;
            zero = k;
            zero_markers = table_len(th, "markers");
        } else if ((r = check_thread_common(th, true)) || (r = check_dumped(th, ncat)))
            return r;
    }
    const cJSON *c;
    bool any_zero = false;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "counters"))
    {
        const cJSON *smp = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "sampleGroups"), 0), "samples");
        bool all_zero = true;
        const cJSON *n;
        cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(smp, "count")) all_zero &= n->valuedouble == 0;
        const char *pid = cJSON_GetObjectItemCaseSensitive(c, "pid")->valuestring;
        int main = (int)cJSON_GetObjectItemCaseSensitive(c, "mainThreadIndex")->valuedouble;
        any_zero |= all_zero;
        if (all_zero ? strcmp(pid, "zero") || main != zero : strcmp(pid, "0") || main != 0)
            return fail("counter %s: pid %s, thread %d (a counter at zero belongs to the hidden thread)",
                        cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring, pid, main);
    }
    if ((any_zero || zero_markers > 0) != (zero >= 0))
        return fail("a thread of the counters at zero without any, or the other way round");
    const cJSON *visible = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "meta"),
                                                            "initialVisibleThreads");
    int shown = nthreads - (zero >= 0);
    if (nthreads > 1 && (!cJSON_IsArray(visible) || cJSON_GetArraySize(visible) != shown))
        return fail("meta.initialVisibleThreads does not list every thread but the hidden one");
    return 0;
}

/* ---- stream ------------------------------------------------------------------------------- */

struct line {
    const char *p;
    size_t n;
    bool terminated;
};

static bool next_line(const char **pos, const char *end, struct line *l)
{
    if (*pos >= end)
        return false;
    const char *nl = memchr(*pos, '\n', (size_t)(end - *pos));
    l->p = *pos;
    l->n = nl ? (size_t)(nl - *pos) : (size_t)(end - *pos);
    l->terminated = nl != NULL;
    *pos = nl ? nl + 1 : end;
    return true;
}

static int check_marker_line(const cJSON *o, int ncat, int lineno)
{
    static const char *const order[] = {"type", "name", "startTime", "endTime", "data", "category"};
    char where[48];
    snprintf(where, sizeof where, "line %d", lineno);
    int k = 0;
    for (const cJSON *c = o->child; c; c = c->next, k++)
        if (k >= 6 || strcmp(c->string, order[k]) != 0)
            return fail("%s: marker keys not in the order type,name,startTime,endTime,data[,category]", where);
    if (k < 5)
        return fail("%s: marker line lacks keys", where);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name"),
                *st = cJSON_GetObjectItemCaseSensitive(o, "startTime"),
                *en = cJSON_GetObjectItemCaseSensitive(o, "endTime"),
                *cat = cJSON_GetObjectItemCaseSensitive(o, "category");
    if (!cJSON_IsString(name) || !cJSON_IsNumber(st) || !(cJSON_IsNull(en) || cJSON_IsNumber(en)))
        return fail("%s: name/startTime/endTime of the wrong type", where);
    if (cJSON_IsNumber(en) && en->valuedouble < st->valuedouble)
        return fail("%s: endTime before startTime", where);
    if (cat && (!is_int(cat) || cat->valuedouble <= 0 || cat->valuedouble >= ncat))
        return fail("%s: category present but 0 or out of range", where);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
    int r = check_data(data, where);
    if (!r && cJSON_IsObject(data))
        r = check_payload(data, name->valuestring, where);
    return r;
}

static int check_stream(const char *buf, size_t len, bool allow_torn)
{
    static const char prefix[] = "{\"type\":\"meta\"";
    if (len < sizeof prefix - 1 || memcmp(buf, prefix, sizeof prefix - 1) != 0)
        return fail("does not start with {\"type\":\"meta\"");
    const char *pos = buf, *end = buf + len;
    struct line l;
    int lineno = 0, ncat = 0, r;
    bool thread = false;
    cJSON *meta = NULL; /* kept: schemas point into it */
    while (next_line(&pos, end, &l)) {
        lineno++;
        bool last = pos >= end;
        cJSON *o = cJSON_ParseWithLength(l.p, l.n);
        if (!o || !cJSON_IsObject(o) || !o->child || strcmp(o->child->string, "type") != 0 ||
            !cJSON_IsString(o->child)) {
            cJSON_Delete(o);
            if (last && !l.terminated && allow_torn)
                break;
            return fail("line %d: not a JSON object starting with a string \"type\"", lineno);
        }
        if (!l.terminated && !allow_torn) {
            cJSON_Delete(o);
            return fail("line %d: last line has no newline", lineno);
        }
        const char *type = o->child->valuestring;
        r = 0;
        if (lineno == 1) {
            r = check_meta(o, false, &ncat);
            meta = o;
            o = NULL;
        }
        else if (strcmp(type, "meta") == 0)
            r = fail("line %d: a second meta line", lineno);
        else if (lineno == 2) {
            if (strcmp(type, "thread") != 0)
                r = fail("line 2: not the thread line");
            else if (cJSON_GetObjectItemCaseSensitive(o, "markers") ||
                     cJSON_GetObjectItemCaseSensitive(o, "stringArray"))
                r = fail("line 2: thread line holds markers/stringArray");
            else
                r = check_thread_common(o, false);
            thread = true;
        } else if (strcmp(type, "marker") == 0)
            r = check_marker_line(o, ncat, lineno);
        cJSON_Delete(o);
        if (r) {
            cJSON_Delete(meta);
            return r;
        }
    }
    cJSON_Delete(meta);
    schemas = NULL;
    if (lineno < 2 || !thread)
        return fail("no thread line");
    return 0;
}

/* ---- queries ------------------------------------------------------------------------------ */

typedef void (*marker_fn)(void *ctx, const char *name, double start, const cJSON *end, int cat, const cJSON *data);

static int thread_markers(const cJSON *th, marker_fn fn, void *ctx);

static int for_each_marker(const char *buf, size_t len, marker_fn fn, void *ctx, cJSON **ret_meta)
{
    if (len >= 14 && memcmp(buf, "{\"type\":\"meta\"", 14) == 0) {
        const char *pos = buf, *end = buf + len;
        struct line l;
        bool first = true;
        while (next_line(&pos, end, &l)) {
            cJSON *o = cJSON_ParseWithLength(l.p, l.n);
            if (first && ret_meta) {
                *ret_meta = o;
                first = false;
                continue;
            }
            first = false;
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
            if (cJSON_IsString(t) && strcmp(t->valuestring, "marker") == 0) {
                const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name"),
                            *st = cJSON_GetObjectItemCaseSensitive(o, "startTime"),
                            *c = cJSON_GetObjectItemCaseSensitive(o, "category");
                if (cJSON_IsString(n) && cJSON_IsNumber(st))
                    fn(ctx, n->valuestring, st->valuedouble, cJSON_GetObjectItemCaseSensitive(o, "endTime"),
                       cJSON_IsNumber(c) ? (int)c->valuedouble : 0, cJSON_GetObjectItemCaseSensitive(o, "data"));
            }
            cJSON_Delete(o);
        }
        return 0;
    }
    cJSON *root = cJSON_ParseWithLength(buf, len);
    if (!root)
        return fail("not JSON");
    /* the run's thread, then the hidden one of the tracks at zero (its markers are the run's too) */
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(root, "threads");
    for (const cJSON *th = cJSON_GetArrayItem(threads, 0); th; th = th->next) {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(th, "pid");
        if (th != threads->child && !(cJSON_IsString(pid) && !strcmp(pid->valuestring, "zero")))
            continue;
        int r = thread_markers(th, fn, ctx);
        if (r) {
            cJSON_Delete(root);
            return r;
        }
    }
    if (ret_meta)
        *ret_meta = cJSON_DetachItemFromObjectCaseSensitive(root, "meta");
    cJSON_Delete(root);
    return 0;
}

/* fn for each marker of thread th's table. */
static int thread_markers(const cJSON *th, marker_fn fn, void *ctx)
{
    const cJSON *sa = cJSON_GetObjectItemCaseSensitive(th, "stringArray");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(th, "markers");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(m, "data");
    if (!cJSON_IsArray(sa) || !cJSON_IsArray(data))
        return fail("no markers table");
    int nstr = cJSON_GetArraySize(sa);
    const char **names = calloc((size_t)nstr + 1, sizeof *names);
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, sa) names[i++] = cJSON_IsString(s) ? s->valuestring : "";
    const cJSON *d = data->child, *n = cJSON_GetObjectItemCaseSensitive(m, "name")->child,
                *st = cJSON_GetObjectItemCaseSensitive(m, "startTime")->child,
                *en = cJSON_GetObjectItemCaseSensitive(m, "endTime")->child,
                *c = cJSON_GetObjectItemCaseSensitive(m, "category")->child;
    for (; d && n && st && en && c; d = d->next, n = n->next, st = st->next, en = en->next, c = c->next) {
        int k = (int)n->valuedouble;
        fn(ctx, k >= 0 && k < nstr ? names[k] : "?", st->valuedouble, en, (int)c->valuedouble, d);
    }
    free(names);
    return 0;
}

static void dump_fn(void *ctx, const char *name, double start, const cJSON *end, int cat, const cJSON *data)
{
    fputs(name, stdout);
    putchar('\t');
    print_ms(start);
    putchar('\t');
    if (cJSON_IsNumber(end))
        print_ms(end->valuedouble);
    else
        fputs("null", stdout);
    printf("\t%d\t", cat);
    char *s = data ? cJSON_PrintUnformatted(data) : NULL;
    fputs(s ? s : "null", stdout);
    putchar('\n');
    free(s);
}

struct count_ctx {
    const char *name;
    long n;
};

static void count_fn(void *ctx, const char *name, double start, const cJSON *end, int cat, const cJSON *data)
{
    struct count_ctx *c = ctx;
    if (strcmp(name, c->name) == 0)
        c->n++;
}

static int print_schemas(void)
{
    size_t n;
    const struct marker_type *const *types = marker_types(&n);
    struct jsonw w;
    jsonw_init(&w);
    jsonw_obj_open(&w);
    for (size_t i = 0; i < n; i++) {
        jsonw_key(&w, types[i]->name);
        jsonw_obj_open(&w);
        for (int pass = 0; pass < 2; pass++) {
            jsonw_key(&w, pass ? "optional" : "fields");
            jsonw_arr_open(&w);
            for (size_t k = 0; k < types[i]->nfields; k++)
                if (!pass || (types[i]->fields[k].flags & MF_OPTIONAL))
                    jsonw_str(&w, types[i]->fields[k].key);
            jsonw_arr_close(&w);
        }
        jsonw_obj_close(&w);
    }
    jsonw_obj_close(&w);
    puts(w.buf);
    jsonw_release(&w);
    return 0;
}

/* The category of stack k as the front-end has it: its upgraders drop stackTable.category where
 * the frameTable has the column (even all null), then take the frame's, else the prefix's, else
 * the first grey category (its default). -1: a stack out of range. */
static int stack_category(const cJSON *th, const cJSON *cats, int k)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(th, "stackTable");
    const cJSON *fc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "frameTable"), "category");
    if (!cJSON_IsArray(fc))
        fc = NULL; /* no frame column: the upgraders keep the stack's */
    for (int depth = 0; k >= 0 && k < table_len(th, "stackTable") && depth < 100000; depth++) {
        const cJSON *c = fc ? cJSON_GetArrayItem(fc, (int)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "frame"), k)->valuedouble)
                            : cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "category"), k);
        if (is_int(c))
            return (int)c->valuedouble;
        const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "prefix"), k);
        k = cJSON_IsNull(p) ? -1 : (int)p->valuedouble;
    }
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cats)
    {
        const cJSON *color = cJSON_GetObjectItemCaseSensitive(c, "color");
        if (cJSON_IsString(color) && !strcmp(color->valuestring, "grey"))
            return i;
        i++;
    }
    return 0;
}

/* The frame a dumped thread's first sample holds for the time before its first stack (profile_stacks.h). */
#define UNSEEN_FRAME "(not sampled before the dump)"

/* Whether stack k of th is that frame's. */
static bool unseen_stack(const cJSON *th, int k)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(th, "stackTable");
    int f = (int)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "frame"), k)->valuedouble;
    int u = (int)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "frameTable"), "func"), f)->valuedouble;
    const cJSON *n = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(th, "stringArray"),
                                        (int)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "funcTable"), "name"), u)->valuedouble);
    return cJSON_IsString(n) && !strcmp(n->valuestring, UNSEEN_FRAME);
}

/* --threads: the dumped threads, a line each: pid, tid, name, processStartupTime, registerTime,
 * the category of its sampled stacks by name (every stack of a dumped thread has its state's, but
 * UNSEEN_FRAME's), as the front-end shows it, and its first sample's time (- none). */
static int print_threads(const char *buf, size_t len)
{
    cJSON *root = cJSON_ParseWithLength(buf, len);
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(root, "threads");
    const cJSON *cats = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "meta"), "categories");
    if (!cJSON_IsArray(threads) || !cJSON_IsArray(cats)) {
        cJSON_Delete(root);
        return fail("not a full profile");
    }
    for (const cJSON *th = threads->child ? threads->child->next : NULL; th; th = th->next) {
        const char *cat = "-";
        const cJSON *smp;
        cJSON_ArrayForEach(smp, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "samples"), "stack"))
        {
            int k = (int)smp->valuedouble;
            if (unseen_stack(th, k))
                continue;
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cats, stack_category(th, cats, k)), "name");
            const char *n = cJSON_IsString(name) ? name->valuestring : "?";
            if (strcmp(cat, "-") && strcmp(cat, n))
                cat = "(mixed)";
            else
                cat = n;
        }
        const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "samples"), "time"), 0);
        char first[32] = "-";
        if (cJSON_IsNumber(t0))
            snprintf(first, sizeof first, "%.3f", t0->valuedouble);
        printf("%s\t%d\t%s\t%.3f\t%.3f\t%s\t%s\n", cJSON_GetObjectItemCaseSensitive(th, "pid")->valuestring,
               (int)cJSON_GetObjectItemCaseSensitive(th, "tid")->valuedouble,
               cJSON_GetObjectItemCaseSensitive(th, "name")->valuestring,
               cJSON_GetObjectItemCaseSensitive(th, "processStartupTime")->valuedouble,
               cJSON_GetObjectItemCaseSensitive(th, "registerTime")->valuedouble, cat, first);
    }
    cJSON_Delete(root);
    return 0;
}

/* --samples: what the dumped processes' threads hold, a line per sample. */
static int print_samples(const char *buf, size_t len, bool with_times)
{
    cJSON *root = cJSON_ParseWithLength(buf, len);
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(root, "threads");
    if (!cJSON_IsArray(threads)) {
        cJSON_Delete(root);
        return fail("not a full profile");
    }
    for (const cJSON *th = threads->child ? threads->child->next : NULL; th; th = th->next) {
        const cJSON *sa = cJSON_GetObjectItemCaseSensitive(th, "stringArray");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(th, "stackTable");
        const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(st, "prefix"),
                    *frame = cJSON_GetObjectItemCaseSensitive(st, "frame");
        const cJSON *ft = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "frameTable"), "func");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "funcTable"), "name");
        const cJSON *smp, *times = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "samples"), "time");
        const cJSON *at = cJSON_IsArray(times) ? times->child : NULL;
        cJSON_ArrayForEach(smp, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(th, "samples"), "stack"))
        {
            if (unseen_stack(th, (int)smp->valuedouble)) { /* nothing known of that time */
                at = at ? at->next : NULL;
                continue;
            }
            printf("%s\t", cJSON_GetObjectItemCaseSensitive(th, "pid")->valuestring);
            for (int k = (int)smp->valuedouble, first = 1; k >= 0; first = 0) {
                int f = (int)cJSON_GetArrayItem(frame, k)->valuedouble;
                int u = (int)cJSON_GetArrayItem(ft, f)->valuedouble;
                const cJSON *name = cJSON_GetArrayItem(sa, (int)cJSON_GetArrayItem(fn, u)->valuedouble);
                printf("%s%s", first ? "" : " < ", cJSON_IsString(name) ? name->valuestring : "?");
                const cJSON *p = cJSON_GetArrayItem(prefix, k);
                k = cJSON_IsNull(p) ? -1 : (int)p->valuedouble;
            }
            if (with_times)
                printf("\t%.3f", cJSON_IsNumber(at) ? at->valuedouble : -1);
            putchar('\n');
            at = at ? at->next : NULL;
        }
    }
    cJSON_Delete(root);
    return 0;
}

int main(int argc, char **argv)
{
    enum { FULL, STREAM, DUMP, COUNT, META, SAMPLES, SAMPLE_TIMES, THREADS } mode = FULL;
    if (argc == 2 && strcmp(argv[1], "--schemas") == 0)
        return print_schemas();
    bool allow_torn = false;
    const char *arg = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (strcmp(argv[i], "--stream") == 0)
            mode = STREAM;
        else if (strcmp(argv[i], "--allow-torn") == 0)
            allow_torn = true;
        else if (strcmp(argv[i], "--dump") == 0)
            mode = DUMP;
        else if (strcmp(argv[i], "--threads") == 0)
            mode = THREADS;
        else if (strcmp(argv[i], "--samples") == 0)
            mode = SAMPLES;
        else if (strcmp(argv[i], "--sample-times") == 0)
            mode = SAMPLE_TIMES;
        else if ((strcmp(argv[i], "--count") == 0 || strcmp(argv[i], "--meta") == 0) && i + 1 < argc) {
            mode = argv[i][2] == 'c' ? COUNT : META;
            arg = argv[++i];
        } else {
            fprintf(stderr, "check-profile: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (i + 1 != argc) {
        fprintf(stderr, "usage: check-profile [--stream [--allow-torn] | --dump | --samples | --sample-times | --threads | --count NAME | --meta KEY] FILE\n");
        return 2;
    }
    file_name = argv[i];
    size_t len = 0;
    char *buf = read_all(file_name, &len);
    if (!buf)
        return fail("cannot read: %s", strerror(errno));
    int r = 0;
    size_t bad = utf8_check((const unsigned char *)buf, len);
    if (bad < len && !(mode == STREAM && allow_torn && !memchr(buf + bad, '\n', len - bad)))
        r = fail("invalid UTF-8 at byte %zu", bad);
    else if (mode == FULL) {
        cJSON *root = cJSON_ParseWithLength(buf, len);
        r = root ? check_full(root) : fail("not valid JSON");
        cJSON_Delete(root);
    } else if (mode == STREAM)
        r = check_stream(buf, len, allow_torn);
    else if (mode == DUMP)
        r = for_each_marker(buf, len, dump_fn, NULL, NULL);
    else if (mode == SAMPLES)
        r = print_samples(buf, len, false);
    else if (mode == SAMPLE_TIMES)
        r = print_samples(buf, len, true);
    else if (mode == THREADS)
        r = print_threads(buf, len);
    else if (mode == COUNT) {
        struct count_ctx c = {arg, 0};
        r = for_each_marker(buf, len, count_fn, &c, NULL);
        if (!r)
            printf("%ld\n", c.n);
    } else {
        cJSON *meta = NULL;
        struct count_ctx c = {"", 0};
        r = for_each_marker(buf, len, count_fn, &c, &meta);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, arg);
        if (!r && !v)
            r = fail("meta has no key %s", arg);
        else if (!r && cJSON_IsString(v))
            puts(v->valuestring);
        else if (!r) {
            char *s = cJSON_PrintUnformatted(v);
            puts(s ? s : "null");
            free(s);
        }
        cJSON_Delete(meta);
    }
    free(buf);
    return r ? 1 : 0;
}

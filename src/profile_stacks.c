/* profile_stacks.c — see profile_stacks.h. */
#include "profile_stacks.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct pstacks {
    cJSON **lines; /* parsed stack lines, in stream order */
    size_t n, cap;
    size_t bytes;
};

static bool is_int_field(const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < 4194304.0 * 1024;
}

static int pid_of(const cJSON *o, const char *key)
{
    return (int)cJSON_GetObjectItemCaseSensitive(o, key)->valuedouble;
}

int pstacks_add(struct pstacks **psp, const char *line, size_t len)
{
    struct pstacks *ps = *psp;
    if (!ps && !(ps = *psp = calloc(1, sizeof *ps)))
        return -ENOMEM;
    if (ps->bytes + len > PSTACKS_MAX_BYTES)
        return 0;
    cJSON *o = cJSON_ParseWithLength(line, len);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(o, "frames");
    if (!o || !is_int_field(o, "pid") || !is_int_field(o, "tid") || !cJSON_IsArray(frames)) {
        cJSON_Delete(o);
        return 0;
    }
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 64;
        cJSON **x = realloc(ps->lines, cap * sizeof *x);
        if (!x) {
            cJSON_Delete(o);
            return -ENOMEM;
        }
        ps->lines = x;
        ps->cap = cap;
    }
    ps->lines[ps->n++] = o;
    ps->bytes += len;
    return 1;
}

void pstacks_free(struct pstacks *ps)
{
    if (!ps)
        return;
    for (size_t i = 0; i < ps->n; i++)
        cJSON_Delete(ps->lines[i]);
    free(ps->lines);
    free(ps);
}

/* Distinct pids in first-seen order; the caller frees. */
static size_t distinct_pids(const struct pstacks *ps, int **ret)
{
    *ret = NULL;
    if (!ps || !ps->n)
        return 0;
    int *pids = malloc(ps->n * sizeof *pids);
    size_t n = 0;
    if (!pids)
        return 0;
    for (size_t i = 0; i < ps->n; i++) {
        int pid = pid_of(ps->lines[i], "pid");
        size_t j = 0;
        while (j < n && pids[j] != pid)
            j++;
        if (j == n)
            pids[n++] = pid;
    }
    *ret = pids;
    return n;
}

size_t pstacks_processes(const struct pstacks *ps)
{
    int *pids;
    size_t n = distinct_pids(ps, &pids);
    free(pids);
    return n;
}

/* The tables of one thread of the profile, built from its stack lines. */
struct tables {
    char **str;                 /* function names = stringArray; function i is named str[i] */
    size_t nstr, cstr;
    size_t *prefix, *frame;     /* stackTable (prefix SIZE_MAX: none) */
    size_t nstack, cstack;
    size_t *sstack;             /* samples */
    double *stime;
    size_t nsample, csample;
    bool failed;
};

static bool grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 32;
    void *x = realloc(*p, c * size);
    if (!x)
        return false;
    *p = x;
    *cap = c;
    return true;
}

static size_t func_of(struct tables *t, const char *name)
{
    for (size_t i = 0; i < t->nstr; i++)
        if (strcmp(t->str[i], name) == 0)
            return i;
    char *s = strdup(name);
    if (!s || !grow((void **)&t->str, &t->cstr, t->nstr, sizeof *t->str)) {
        free(s);
        t->failed = true;
        return SIZE_MAX;
    }
    t->str[t->nstr] = s;
    return t->nstr++;
}

static size_t stack_of(struct tables *t, size_t prefix, size_t frame)
{
    for (size_t i = 0; i < t->nstack; i++)
        if (t->prefix[i] == prefix && t->frame[i] == frame)
            return i;
    size_t c = t->cstack;
    if (!grow((void **)&t->prefix, &c, t->nstack, sizeof *t->prefix) ||
        !grow((void **)&t->frame, &t->cstack, t->nstack, sizeof *t->frame)) {
        t->failed = true;
        return SIZE_MAX;
    }
    t->prefix[t->nstack] = prefix;
    t->frame[t->nstack] = frame;
    return t->nstack++;
}

/* One sample: the root frame naming the thread, then the frames from the outermost in. */
static void add_sample(struct tables *t, const cJSON *line)
{
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(line, "thread");
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(line, "time");
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(line, "frames");
    char root[128];
    snprintf(root, sizeof root, "thread %d %s", pid_of(line, "tid"), cJSON_IsString(th) ? th->valuestring : "");
    size_t stack = stack_of(t, SIZE_MAX, func_of(t, root));
    for (int k = cJSON_GetArraySize(frames) - 1; k >= 0 && !t->failed; k--) {
        const cJSON *f = cJSON_GetArrayItem(frames, k);
        stack = stack_of(t, stack, func_of(t, cJSON_IsString(f) ? f->valuestring : "?"));
    }
    size_t c = t->csample;
    if (t->failed || !grow((void **)&t->sstack, &c, t->nsample, sizeof *t->sstack) ||
        !grow((void **)&t->stime, &t->csample, t->nsample, sizeof *t->stime)) {
        t->failed = true;
        return;
    }
    double at = cJSON_IsNumber(tm) ? tm->valuedouble : 0;
    if (t->nsample && at < t->stime[t->nsample - 1] + 0.001)
        at = t->stime[t->nsample - 1] + 0.001;
    t->sstack[t->nsample] = stack;
    t->stime[t->nsample++] = at;
}

static void free_tables(struct tables *t)
{
    for (size_t i = 0; i < t->nstr; i++)
        free(t->str[i]);
    free(t->str);
    free(t->prefix);
    free(t->frame);
    free(t->sstack);
    free(t->stime);
}

/* "key":[v,v,...]: the same JSON value n times. */
static void repeat(struct jsonw *w, const char *key, const char *value, size_t n)
{
    jsonw_key(w, key);
    jsonw_arr_open(w);
    for (size_t i = 0; i < n; i++)
        jsonw_raw(w, value, strlen(value));
    jsonw_arr_close(w);
}

static void indexes(struct jsonw *w, const char *key, const size_t *v, size_t n)
{
    jsonw_key(w, key);
    jsonw_arr_open(w);
    for (size_t i = 0; i < n; i++) {
        if (v)
            v[i] == SIZE_MAX ? jsonw_null(w) : jsonw_uint(w, v[i]);
        else
            jsonw_uint(w, i);
    }
    jsonw_arr_close(w);
}

/* A table of n rows whose columns are constants, but the one (value NULL) holding the row's own
 * index. */
struct column {
    const char *key, *value;
};
static void identity_table(struct jsonw *w, const char *name, const struct column *cols, size_t ncols, size_t n)
{
    jsonw_key(w, name);
    jsonw_obj_open(w);
    for (size_t i = 0; i < ncols; i++) {
        if (cols[i].value)
            repeat(w, cols[i].key, cols[i].value, n);
        else
            indexes(w, cols[i].key, NULL, n);
    }
    jsonw_kv_uint(w, "length", n);
    jsonw_obj_close(w);
}

static void write_thread(struct jsonw *w, const cJSON *first, const struct tables *t, double at)
{
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(first, "process");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(first, "name");
    int pid = pid_of(first, "pid");
    char pidstr[16];
    snprintf(pidstr, sizeof pidstr, "%d", pid);
    jsonw_obj_open(w);
    jsonw_kv_str(w, "processType", "default");
    jsonw_kv_str(w, "processName", cJSON_IsString(cmd) ? cmd->valuestring : pidstr);
    jsonw_kv_double(w, "processStartupTime", at, 3);
    jsonw_key(w, "processShutdownTime");
    jsonw_null(w);
    jsonw_kv_double(w, "registerTime", at, 3);
    jsonw_key(w, "unregisterTime");
    jsonw_null(w);
    jsonw_key(w, "pausedRanges");
    jsonw_arr_open(w);
    jsonw_arr_close(w);
    jsonw_kv_bool(w, "showMarkersInTimeline", false);
    jsonw_kv_str(w, "name", cJSON_IsString(name) ? name->valuestring : pidstr);
    jsonw_kv_bool(w, "isMainThread", true);
    jsonw_kv_str(w, "pid", pidstr);
    jsonw_kv_int(w, "tid", pid);

    jsonw_key(w, "samples");
    jsonw_obj_open(w);
    jsonw_kv_str(w, "weightType", "samples");
    jsonw_key(w, "weight");
    jsonw_null(w);
    indexes(w, "stack", t->sstack, t->nsample);
    jsonw_key(w, "time");
    jsonw_arr_open(w);
    for (size_t i = 0; i < t->nsample; i++)
        jsonw_double(w, t->stime[i], 3);
    jsonw_arr_close(w);
    jsonw_kv_uint(w, "length", t->nsample);
    jsonw_obj_close(w);

    jsonw_key(w, "stackTable");
    jsonw_obj_open(w);
    indexes(w, "frame", t->frame, t->nstack);
    indexes(w, "prefix", t->prefix, t->nstack);
    repeat(w, "category", "0", t->nstack);
    repeat(w, "subcategory", "0", t->nstack);
    jsonw_kv_uint(w, "length", t->nstack);
    jsonw_obj_close(w);

    /* one frame per function: frame i is function i, named by string i */
    static const struct column frame_cols[] = {
        {"address", "-1"}, {"inlineDepth", "0"}, {"category", "null"}, {"subcategory", "0"},
        {"func", NULL},    {"nativeSymbol", "null"}, {"innerWindowID", "0"}, {"implementation", "null"},
        {"line", "null"},  {"column", "null"},
    };
    static const struct column func_cols[] = {
        {"isJS", "false"}, {"relevantForJS", "false"}, {"name", NULL}, {"resource", "-1"},
        {"fileName", "null"}, {"lineNumber", "null"}, {"columnNumber", "null"},
    };
    identity_table(w, "frameTable", frame_cols, ARRAY_SIZE(frame_cols), t->nstr);
    identity_table(w, "funcTable", func_cols, ARRAY_SIZE(func_cols), t->nstr);

    static const char rest[] =
        "\"resourceTable\":{\"lib\":[],\"name\":[],\"host\":[],\"type\":[],\"length\":0},"
        "\"nativeSymbols\":{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],\"length\":0}";
    jsonw_append(w, ",", 1);
    jsonw_append(w, rest, sizeof rest - 1);
    jsonw_key(w, "stringArray");
    jsonw_arr_open(w);
    for (size_t i = 0; i < t->nstr; i++)
        jsonw_str(w, t->str[i]);
    jsonw_arr_close(w);
    static const char markers[] = ",\"markers\":{\"data\":[],\"name\":[],\"startTime\":[],\"endTime\":[],"
                                  "\"phase\":[],\"category\":[],\"stack\":[],\"length\":0}";
    jsonw_append(w, markers, sizeof markers - 1);
    jsonw_obj_close(w);
}

void pstacks_write(const struct pstacks *ps, struct jsonw *w)
{
    int *pids;
    size_t n = distinct_pids(ps, &pids);
    for (size_t p = 0; p < n; p++) {
        struct tables t = {0};
        const cJSON *first = NULL;
        double at = 0;
        for (size_t i = 0; i < ps->n && !t.failed; i++) {
            const cJSON *line = ps->lines[i];
            if (pid_of(line, "pid") != pids[p])
                continue;
            if (!first) {
                const cJSON *tm = cJSON_GetObjectItemCaseSensitive(line, "time");
                first = line;
                at = cJSON_IsNumber(tm) ? tm->valuedouble : 0;
            }
            add_sample(&t, line);
        }
        if (!t.failed && first)
            write_thread(w, first, &t, at);
        free_tables(&t);
    }
    free(pids);
}

/* profile_stacks.c — see profile_stacks.h. */
#include "profile/profile_stacks.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "base/markers.h"
#include "profile/stream.h"

struct pstacks {
    cJSON **lines; /* parsed stack lines, in stream order */
    size_t n, cap;
    size_t bytes;
    struct pstacks_end { int pid; double ms; } *ends; /* dumped processes' ends (pstacks_note_end) */
    size_t nends, capends;
};

static int pid_of(const cJSON *o, const char *key);

void pstacks_note_end(struct pstacks *ps, int pid, double end_ms)
{
    if (!ps || pid <= 0)
        return;
    bool dumped = false;
    for (size_t i = 0; i < ps->n && !dumped; i++)
        dumped = pid_of(ps->lines[i], "pid") == pid;
    if (!dumped)
        return;
    if (ps->nends == ps->capends) {
        size_t cap = ps->capends ? ps->capends * 2 : 8;
        struct pstacks_end *x = realloc(ps->ends, cap * sizeof *x);
        if (!x)
            return; /* the track ends open, as without it */
        ps->ends = x;
        ps->capends = cap;
    }
    ps->ends[ps->nends++] = (struct pstacks_end){pid, end_ms};
}

/* The end noted for pid after at (the dump's time: a pid reused before it is another process),
 * NAN: none. */
static double end_of(const struct pstacks *ps, int pid, double at)
{
    for (size_t i = 0; i < ps->nends; i++)
        if (ps->ends[i].pid == pid && ps->ends[i].ms >= at)
            return ps->ends[i].ms;
    return NAN;
}

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
    free(ps->ends);
    free(ps);
}

/* The dumped threads, (pid, tid) in first-seen order, grouped by process (the front-end makes a
 * process's threads one track with its own below), the main thread first; the caller frees. */
struct key {
    int pid, tid;
};
static size_t distinct_threads(const struct pstacks *ps, struct key **ret)
{
    *ret = NULL;
    if (!ps || !ps->n)
        return 0;
    struct key *k = malloc(ps->n * sizeof *k);
    size_t n = 0;
    if (!k)
        return 0;
    for (size_t i = 0; i < ps->n; i++) {
        struct key x = {pid_of(ps->lines[i], "pid"), pid_of(ps->lines[i], "tid")};
        size_t j = 0;
        while (j < n && (k[j].pid != x.pid || k[j].tid != x.tid))
            j++;
        if (j < n)
            continue;
        /* after the last thread of its process (the main thread before the others), else last */
        size_t at = n, first = n;
        for (size_t q = 0; q < n; q++)
            if (k[q].pid == x.pid) {
                first = MIN(first, q);
                at = q + 1;
            }
        if (x.tid == x.pid && first < n)
            at = first;
        memmove(&k[at + 1], &k[at], (n - at) * sizeof *k);
        k[at] = x;
        n++;
    }
    *ret = k;
    return n;
}

size_t pstacks_threads(const struct pstacks *ps)
{
    struct key *k;
    size_t n = distinct_threads(ps, &k);
    free(k);
    return n;
}

/* The tables of one thread of the profile, built from its stack lines. */
struct tables {
    char **str;                 /* stringArray */
    size_t nstr, cstr;
    size_t *fname, *ffile, *fres; /* funcTable: name, fileName (SIZE_MAX: none), resource (likewise) */
    int *fline;                 /* lineNumber (0: none) */
    size_t nfunc, cfunc;
    size_t *rname;              /* resourceTable: a library, by name */
    size_t nres, cres;
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

static size_t string_of(struct tables *t, const char *s)
{
    for (size_t i = 0; i < t->nstr; i++)
        if (strcmp(t->str[i], s) == 0)
            return i;
    char *d = strdup(s);
    if (!d || !grow((void **)&t->str, &t->cstr, t->nstr, sizeof *t->str)) {
        free(d);
        t->failed = true;
        return SIZE_MAX;
    }
    t->str[t->nstr] = d;
    return t->nstr++;
}

static size_t resource_of(struct tables *t, const char *lib)
{
    size_t name = string_of(t, lib);
    for (size_t i = 0; i < t->nres; i++)
        if (t->rname[i] == name)
            return i;
    if (t->failed || !grow((void **)&t->rname, &t->cres, t->nres, sizeof *t->rname)) {
        t->failed = true;
        return SIZE_MAX;
    }
    t->rname[t->nres] = name;
    return t->nres++;
}

/* One function per distinct name, source line and library; frame i is function i. */
static size_t func_of(struct tables *t, const char *name, const char *file, int line, const char *lib)
{
    size_t n = string_of(t, name), f = file ? string_of(t, file) : SIZE_MAX;
    size_t r = lib ? resource_of(t, lib) : SIZE_MAX;
    if (t->failed)
        return SIZE_MAX;
    for (size_t i = 0; i < t->nfunc; i++)
        if (t->fname[i] == n && t->ffile[i] == f && t->fline[i] == line && t->fres[i] == r)
            return i;
    size_t c1 = t->cfunc, c2 = t->cfunc, c3 = t->cfunc;
    if (!grow((void **)&t->fname, &c1, t->nfunc, sizeof *t->fname) ||
        !grow((void **)&t->ffile, &c2, t->nfunc, sizeof *t->ffile) ||
        !grow((void **)&t->fres, &c3, t->nfunc, sizeof *t->fres) ||
        !grow((void **)&t->fline, &t->cfunc, t->nfunc, sizeof *t->fline)) {
        t->failed = true;
        return SIZE_MAX;
    }
    t->fname[t->nfunc] = n;
    t->ffile[t->nfunc] = f;
    t->fres[t->nfunc] = r;
    t->fline[t->nfunc] = line;
    return t->nfunc++;
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

static const char *str_at(const cJSON *arr, int k)
{
    const cJSON *x = cJSON_GetArrayItem(arr, k);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

static void push_sample(struct tables *t, size_t stack, double at)
{
    size_t c = t->csample;
    if (t->failed || !grow((void **)&t->sstack, &c, t->nsample, sizeof *t->sstack) ||
        !grow((void **)&t->stime, &t->csample, t->nsample, sizeof *t->stime)) {
        t->failed = true;
        return;
    }
    if (t->nsample && at < t->stime[t->nsample - 1] + 0.001)
        at = t->stime[t->nsample - 1] + 0.001;
    t->sstack[t->nsample] = stack;
    t->stime[t->nsample++] = at;
}

static double number_or(const cJSON *line, const char *key, double dflt)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(line, key);
    return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

/* One sample: the root frame naming the thread, then the frames from the outermost in. A thread
 * that had not run since idleSince was in that stack all along (it ran no instruction): a sample
 * there too, so that the stack spans that time in the Stack Chart. */
static void add_sample(struct tables *t, const cJSON *line)
{
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(line, "thread");
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(line, "time");
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(line, "frames");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(line, "files");
    const cJSON *lines = cJSON_GetObjectItemCaseSensitive(line, "lines");
    const cJSON *libs = cJSON_GetObjectItemCaseSensitive(line, "libs");
    char root[128];
    snprintf(root, sizeof root, "thread %d %s", pid_of(line, "tid"), cJSON_IsString(th) ? th->valuestring : "");
    size_t stack = stack_of(t, SIZE_MAX, func_of(t, root, NULL, 0, NULL));
    for (int k = cJSON_GetArraySize(frames) - 1; k >= 0 && !t->failed; k--) {
        const char *name = str_at(frames, k), *file = str_at(files, k);
        const cJSON *ln = cJSON_GetArrayItem(lines, k);
        int lno = cJSON_IsNumber(ln) && ln->valuedouble >= 1 && ln->valuedouble < 1e9 ? (int)ln->valuedouble : 0;
        stack = stack_of(t, stack, func_of(t, name ? name : "?", lno ? file : NULL, file ? lno : 0, str_at(libs, k)));
    }
    double at = cJSON_IsNumber(tm) ? tm->valuedouble : 0;
    double since = number_or(line, "idleSince", at);
    since = MAX(since, number_or(line, "threadStart", number_or(line, "start", since)));
    if (t->nsample)
        since = MAX(since, t->stime[t->nsample - 1] + 0.001);
    if (since < at - 0.001)
        push_sample(t, stack, since);
    push_sample(t, stack, at);
}

static void free_tables(struct tables *t)
{
    for (size_t i = 0; i < t->nstr; i++)
        free(t->str[i]);
    free(t->str);
    free(t->fname);
    free(t->ffile);
    free(t->fres);
    free(t->fline);
    free(t->rname);
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

/* "key":[...]: v's n values (SIZE_MAX: none, as null), or 0..n-1 when v is NULL. */
static void indexes(struct jsonw *w, const char *key, const size_t *v, size_t n, bool none_is_minus1)
{
    jsonw_key(w, key);
    jsonw_arr_open(w);
    for (size_t i = 0; i < n; i++) {
        if (!v)
            jsonw_uint(w, i);
        else if (v[i] != SIZE_MAX)
            jsonw_uint(w, v[i]);
        else if (none_is_minus1)
            jsonw_int(w, -1);
        else
            jsonw_null(w);
    }
    jsonw_arr_close(w);
}

/* The category of a thread's stacks: its state (markers.h's CAT_RUNNING...), where the stream's
 * meta has those categories (ncat: how many it has; an older stream has fewer). */
static unsigned state_category(const cJSON *line, unsigned ncat)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(line, "state");
    unsigned cat = CAT_OTHER;
    switch (cJSON_IsString(st) ? st->valuestring[0] : '?') {
    case 'R': cat = CAT_RUNNING; break;
    case 'S': case 'I': cat = CAT_SLEEPING; break;
    case 'D': cat = CAT_DISK_WAIT; break;
    case 'T': case 't': cat = CAT_STOPPED; break;
    default: break;
    }
    return cat < ncat ? cat : CAT_OTHER;
}

/* "key":[...]: each function's line (null: none). */
static void lines(struct jsonw *w, const char *key, const struct ptables *t)
{
    jsonw_key(w, key);
    jsonw_arr_open(w);
    for (size_t i = 0; i < t->nfunc; i++)
        t->fline && t->fline[i] ? jsonw_int(w, t->fline[i]) : jsonw_null(w);
    jsonw_arr_close(w);
}

/* A column of one of a thread's tables: one value repeated, v's indexes (indexes()), or each
 * function's line (lines()). */
struct column {
    const char *key;
    const char *value; /* repeated */
    const size_t *v;   /* with index: indexes() of v (NULL: 0..n-1) */
    bool index, none_is_minus1, line;
    bool absent; /* an index column the thread has none of: all null */
};
#define REPEAT(k, val) {.key = k, .value = val}
#define INDEX(k, vec, minus1) {.key = k, .v = vec, .index = true, .none_is_minus1 = minus1}
#define LINES(k) {.key = k, .line = true}

/* "key":{...its columns of n values...,"length":n} */
static void table(struct jsonw *w, const char *key, const struct column *col, size_t ncol, size_t n,
                  const struct ptables *t)
{
    jsonw_key(w, key);
    jsonw_obj_open(w);
    for (size_t i = 0; i < ncol; i++)
        if (col[i].line)
            lines(w, col[i].key, t);
        else if (col[i].index && col[i].absent)
            repeat(w, col[i].key, "null", n);
        else if (col[i].index)
            indexes(w, col[i].key, col[i].v, n, col[i].none_is_minus1);
        else
            repeat(w, col[i].key, col[i].value, n);
    jsonw_kv_uint(w, "length", n);
    jsonw_obj_close(w);
}

/* The thread's stack, frame, function and resource tables; its stacks are of category cat. */
static void write_tables(struct jsonw *w, const struct ptables *t, const char *cat)
{
    const struct column stack[] = {INDEX("frame", t->frame, false), INDEX("prefix", t->prefix, false),
                                   REPEAT("category", cat), REPEAT("subcategory", "0")};
    table(w, "stackTable", stack, ARRAY_SIZE(stack), t->nstack, t);
    /* one frame per function: frame i is function i */
    static const struct column frame[] = {
        REPEAT("address", "-1"),      REPEAT("inlineDepth", "0"),      REPEAT("category", "null"),
        REPEAT("subcategory", "0"),   INDEX("func", NULL, false),      REPEAT("nativeSymbol", "null"),
        REPEAT("innerWindowID", "0"), REPEAT("implementation", "null"), LINES("line"),
        REPEAT("column", "null")};
    table(w, "frameTable", frame, ARRAY_SIZE(frame), t->nfunc, t);
    const struct column func[] = {
        REPEAT("isJS", "false"),            REPEAT("relevantForJS", "false"), INDEX("name", t->fname, false),
        INDEX("resource", t->fres, true),   {.key = "fileName", .v = t->ffile, .index = true, .absent = !t->ffile}, LINES("lineNumber"),
        REPEAT("columnNumber", "null")};
    table(w, "funcTable", func, ARRAY_SIZE(func), t->nfunc, t);
    /* a library by its name only: the profile has no libs table (nothing to symbolicate) */
    const struct column res[] = {REPEAT("lib", "null"), INDEX("name", t->rname, false), REPEAT("host", "null"),
                                 REPEAT("type", "1")};
    table(w, "resourceTable", res, ARRAY_SIZE(res), t->nres, t);
}

/* Whether line is a process's main thread, and another dumped process's main thread, or the run's
 * own (run_name), has its name: the front-end names a process's track after it, and the two
 * tracks would read the same. */
static bool homonym(const struct pstacks *ps, const cJSON *line, const char *run_name)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(line, "thread");
    int pid = pid_of(line, "pid");
    if (!cJSON_IsString(name) || pid_of(line, "tid") != pid)
        return false;
    if (run_name && run_name[0] && !strcmp(name->valuestring, run_name))
        return true; /* a nested resmon-run */
    for (size_t i = 0; i < ps->n; i++) {
        const cJSON *l = ps->lines[i], *o = cJSON_GetObjectItemCaseSensitive(l, "thread");
        if (pid_of(l, "pid") != pid && pid_of(l, "tid") == pid_of(l, "pid") && cJSON_IsString(o) &&
            !strcmp(o->valuestring, name->valuestring))
            return true;
    }
    return false;
}

void ptables_write(struct jsonw *w, const struct ptables *t, const char *cat)
{
    jsonw_key(w, "unregisterTime");
    jsonw_null(w);
    jsonw_key(w, "pausedRanges");
    jsonw_arr_open(w);
    jsonw_arr_close(w);
    jsonw_kv_bool(w, "showMarkersInTimeline", false);
    jsonw_key(w, "samples");
    jsonw_obj_open(w);
    jsonw_kv_str(w, "weightType", "samples");
    jsonw_key(w, "weight");
    jsonw_null(w);
    indexes(w, "stack", t->sstack, t->nsample, false);
    jsonw_key(w, "time");
    jsonw_arr_open(w);
    for (size_t i = 0; i < t->nsample; i++)
        jsonw_double(w, t->stime[i], 3);
    jsonw_arr_close(w);
    jsonw_kv_uint(w, "length", t->nsample);
    jsonw_obj_close(w);

    write_tables(w, t, cat);

    static const char rest[] =
        ",\"nativeSymbols\":{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],\"length\":0}";
    jsonw_append(w, rest, sizeof rest - 1);
    jsonw_key(w, "stringArray");
    jsonw_arr_open(w);
    for (size_t i = 0; i < t->nstr; i++)
        jsonw_str(w, t->str[i]);
    jsonw_arr_close(w);
    static const char markers[] = ",\"markers\":{\"data\":[],\"name\":[],\"startTime\":[],\"endTime\":[],"
                                  "\"phase\":[],\"category\":[],\"stack\":[],\"length\":0}";
    jsonw_append(w, markers, sizeof markers - 1);
}

static void write_thread(struct jsonw *w, const cJSON *first, const struct tables *t, unsigned ncat, bool same_name,
                         double end)
{
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(first, "process");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(first, "thread");
    int pid = pid_of(first, "pid"), tid = pid_of(first, "tid");
    char pidstr[16], cat[16];
    snprintf(pidstr, sizeof pidstr, "%d", pid);
    snprintf(cat, sizeof cat, "%u", state_category(first, ncat));
    /* the process's life, and the thread's within it: where they are unknown (an older stream),
     * the dump's time */
    double at = t->nsample ? t->stime[0] : 0;
    double start = number_or(first, "start", at);
    double reg = number_or(first, "threadStart", start);
    jsonw_obj_open(w);
    /* not the front-end's "default" (its parent process, sorted first): the run's own thread,
     * resmon-run, is that, and leads the timeline */
    jsonw_kv_str(w, "processType", "command");
    jsonw_kv_str(w, "processName", cJSON_IsString(cmd) ? cmd->valuestring : pidstr);
    jsonw_kv_double(w, "processStartupTime", MIN(start, at), 3);
    /* where the process ended (killed at the stop), the track ends */
    jsonw_key(w, "processShutdownTime");
    if (isnan(end))
        jsonw_null(w);
    else
        jsonw_double(w, end, 3);
    jsonw_kv_double(w, "registerTime", MIN(MAX(reg, start), at), 3);
    if (same_name) {
        char named[64];
        snprintf(named, sizeof named, "%.40s (pid %d)", name->valuestring, pid);
        jsonw_kv_str(w, "name", named);
    } else {
        jsonw_kv_str(w, "name", cJSON_IsString(name) && name->valuestring[0] ? name->valuestring : pidstr);
    }
    jsonw_kv_bool(w, "isMainThread", tid == pid);
    jsonw_kv_str(w, "pid", pidstr);
    jsonw_kv_int(w, "tid", tid);

    struct ptables pt = {.str = t->str, .nstr = t->nstr, .fname = t->fname, .ffile = t->ffile, .fres = t->fres,
                         .fline = t->fline, .nfunc = t->nfunc, .rname = t->rname, .nres = t->nres,
                         .prefix = t->prefix, .frame = t->frame, .nstack = t->nstack, .sstack = t->sstack,
                         .stime = t->stime, .nsample = t->nsample};
    ptables_write(w, &pt, cat);
    jsonw_obj_close(w);
}

void pstacks_write(const struct pstacks *ps, unsigned ncat, const char *run_name, struct jsonw *w)
{
    struct key *k;
    size_t n = distinct_threads(ps, &k);
    for (size_t p = 0; p < n; p++) {
        struct tables t = {0};
        const cJSON *first = NULL;
        for (size_t i = 0; i < ps->n && !t.failed; i++) {
            const cJSON *line = ps->lines[i];
            if (pid_of(line, "pid") != k[p].pid || pid_of(line, "tid") != k[p].tid)
                continue;
            if (!first)
                first = line;
            add_sample(&t, line);
        }
        if (!t.failed && first)
            write_thread(w, first, &t, ncat, homonym(ps, first, run_name),
                         end_of(ps, k[p].pid, t.nsample ? t.stime[t.nsample - 1] : 0));
        free_tables(&t);
    }
    free(k);
}

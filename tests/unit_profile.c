/* Unit tests of the stream → profile conversion, finalization and recovery, on mozsystemmonitor's
 * real files and on hand-made streams (torn and garbage lines, open state, symlinks). */
#include "profile/profile.h"

#include <check.h>
#include "check_run.h"
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/util.h"
#include "profile/stream.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

static char dir[] = "/tmp/unit_profile.XXXXXX";

static void setup(void) { ck_assert_ptr_nonnull(mkdtemp(dir)); }
static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
    strcpy(dir, "/tmp/unit_profile.XXXXXX");
}

static const char *fixture(const char *name)
{
    static char path[1024];
    const char *top = getenv("TOP_SRCDIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/moz/%s", top ? top : SRCDIR, name);
    return path;
}

static char *slurp(const char *path, size_t *ret_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_msg(fd >= 0, "open %s", path);
    struct stat st;
    fstat(fd, &st);
    char *buf = malloc((size_t)st.st_size + 1);
    ck_assert_int_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
    buf[st.st_size] = '\0';
    close(fd);
    if (ret_len)
        *ret_len = (size_t)st.st_size;
    return buf;
}

static void spit(const char *path, const char *text, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write_all(fd, text, n), 0);
    close(fd);
}

/* The decompressed contents of a gzip file (zlib's own reader), NUL-terminated. */
static char *gunzip(const char *path, size_t *ret_len)
{
    gzFile g = gzopen(path, "rb");
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(gzdirect(g), 0); /* compressed, not plain */
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    int n;
    while ((n = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)n;
        if (len == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    ck_assert_int_eq(n, 0);
    gzclose(g);
    buf[len] = '\0';
    *ret_len = len;
    return buf;
}

static char *in_dir(const char *name)
{
    static char paths[4][256];
    static int k;
    char *p = paths[k++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

/* Convert the file at path (stream) with profile_convert into memory and parse it. */
static cJSON *convert_file(const char *path, const struct profile_end *end, struct profile_stats *st, int *ret)
{
    int in = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(in, 0);
    char *out_path = in_dir("out.json");
    int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_int_ge(out, 0);
    int r = profile_convert(in, out, end, st);
    close(in);
    close(out);
    if (ret)
        *ret = r;
    if (r < 0)
        return NULL;
    char *text = slurp(out_path, NULL);
    cJSON *root = cJSON_Parse(text);
    ck_assert_msg(root != NULL, "output is not JSON");
    free(text);
    return root;
}

static const cJSON *thread0(const cJSON *root)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(root, "threads"), 0);
}

/* The structural invariants every profile must keep. */
static void check_structure(const cJSON *root)
{
    const cJSON *meta = cJSON_GetObjectItem(root, "meta");
    ck_assert(cJSON_IsObject(meta));
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(meta, "profilingEndTime")));
    ck_assert_ptr_null(cJSON_GetObjectItem(meta, "type"));
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(root, "libs")));
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(root, "counters")));
    /* the run's thread, then one per process dumped at a stop (test_dumped_processes) */
    ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(root, "threads")), 1);
    const cJSON *th = thread0(root);
    ck_assert_ptr_null(cJSON_GetObjectItem(th, "type"));
    const cJSON *sa = cJSON_GetObjectItem(th, "stringArray");
    ck_assert_str_eq(cJSON_GetArrayItem(sa, 0)->valuestring, "(root)");
    const cJSON *m = cJSON_GetObjectItem(th, "markers");
    int n = (int)cJSON_GetObjectItem(m, "length")->valuedouble;
    static const char *const cols[] = {"data", "name", "startTime", "endTime", "phase", "category", "stack"};
    for (size_t i = 0; i < ARRAY_SIZE(cols); i++)
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, cols[i])), n);
    int ncat = cJSON_GetArraySize(cJSON_GetObjectItem(meta, "categories"));
    for (int i = 0; i < n; i++) {
        const cJSON *en = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "endTime"), i);
        ck_assert_int_eq((int)cJSON_GetArrayItem(cJSON_GetObjectItem(m, "phase"), i)->valuedouble,
                         cJSON_IsNull(en) ? 0 : 1);
        int name = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(m, "name"), i)->valuedouble;
        ck_assert(name >= 1 && name < cJSON_GetArraySize(sa));
        int cat = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(m, "category"), i)->valuedouble;
        ck_assert(cat >= 0 && cat < ncat);
    }
}

/* "name|start|end|cat|data" of marker i. */
static char *marker_key(const cJSON *root, int i)
{
    const cJSON *th = thread0(root), *m = cJSON_GetObjectItem(th, "markers");
    int name = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(m, "name"), i)->valuedouble;
    const cJSON *en = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "endTime"), i);
    char *data = cJSON_PrintUnformatted(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "data"), i));
    char *out;
    char end[32];
    if (cJSON_IsNull(en))
        strcpy(end, "null");
    else
        snprintf(end, sizeof end, "%.3f", en->valuedouble);
    ck_assert_int_gt(asprintf(&out, "%s|%.3f|%s|%d|%s",
                              cJSON_GetArrayItem(cJSON_GetObjectItem(th, "stringArray"), name)->valuestring,
                              cJSON_GetArrayItem(cJSON_GetObjectItem(m, "startTime"), i)->valuedouble, end,
                              (int)cJSON_GetArrayItem(cJSON_GetObjectItem(m, "category"), i)->valuedouble, data),
                     0);
    free(data);
    return out;
}

static int marker_count(const cJSON *root)
{
    return (int)cJSON_GetObjectItem(cJSON_GetObjectItem(thread0(root), "markers"), "length")->valuedouble;
}

static int find_marker(const cJSON *root, const char *key)
{
    for (int i = 0; i < marker_count(root); i++) {
        char *k = marker_key(root, i);
        bool eq = strcmp(k, key) == 0;
        free(k);
        if (eq)
            return i;
    }
    return -1;
}

START_TEST(test_fixture_complete_matches_final)
{
    struct profile_end end = {.end_ms = 4179.978, .open_status = "INCOMPLETE"};
    struct profile_stats st;
    cJSON *ours = convert_file(fixture("stream-complete.jsonl"), &end, &st, NULL);
    ck_assert_ptr_nonnull(ours);
    check_structure(ours);
    ck_assert_uint_eq(st.markers, 217);
    ck_assert_uint_eq(st.skipped_lines, 0);
    char *text = slurp(fixture("final-profile.json"), NULL);
    cJSON *final = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(final);
    /* meta: the same keys in the same order with the same values. */
    const cJSON *a = cJSON_GetObjectItem(ours, "meta")->child, *b = cJSON_GetObjectItem(final, "meta")->child;
    for (; a && b; a = a->next, b = b->next) {
        ck_assert_str_eq(a->string, b->string);
        ck_assert_msg(cJSON_Compare(a, b, true), "meta.%s differs", a->string);
    }
    ck_assert(!a && !b);
    /* thread: the same keys in the same order; the fixed tables identical. (Upstream's processName
     * disagrees between its stream, "xpcshell" = the product, and its final profile, "mach"; the
     * converter keeps the stream's. Upstream's final profile also turns marker stacks into frames,
     * which the stream does not carry: the stack tables are compared by key only.) */
    static const char *const differ[] = {"stringArray", "markers", "processName", "stackTable", "frameTable",
                                         "funcTable", "resourceTable", "nativeSymbols"};
    a = thread0(ours)->child, b = thread0(final)->child;
    for (; a && b; a = a->next, b = b->next) {
        ck_assert_str_eq(a->string, b->string);
        bool skip = false;
        for (size_t j = 0; j < ARRAY_SIZE(differ); j++)
            skip |= strcmp(a->string, differ[j]) == 0;
        if (!skip)
            ck_assert_msg(cJSON_Compare(a, b, true), "thread.%s differs", a->string);
    }
    ck_assert(!a && !b);
    /* Every marker of the final profile that the stream carries is there, identical. (Upstream's
     * final profile is built from memory, not from the stream: it renames simple_event, turns stacks
     * into frames, adds its own teardown markers, and rounds the sampler's times to whole ms.) */
    static const char *const same[] = {"CPU Use", "Memory", "IO", "NetIO", "Sampling Interval", "test", "suite",
                                       "PASS", "INFO", "output", "command"};
    int compared = 0;
    const cJSON *fm = cJSON_GetObjectItem(thread0(final), "markers"), *om = cJSON_GetObjectItem(thread0(ours), "markers");
    for (int i = 0; i < marker_count(final); i++) {
        char *k = marker_key(final, i);
        bool want = false;
        for (size_t j = 0; j < ARRAY_SIZE(same); j++)
            want |= strncmp(k, same[j], strlen(same[j])) == 0 && k[strlen(same[j])] == '|';
        if (want) {
            /* name, category and payload equal; times within the rounding */
            const char *name = strndup(k, strcspn(k, "|"));
            char *fdata = cJSON_PrintUnformatted(cJSON_GetArrayItem(cJSON_GetObjectItem(fm, "data"), i));
            double fst = cJSON_GetArrayItem(cJSON_GetObjectItem(fm, "startTime"), i)->valuedouble;
            const cJSON *fen = cJSON_GetArrayItem(cJSON_GetObjectItem(fm, "endTime"), i);
            int fcat = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(fm, "category"), i)->valuedouble;
            bool found = false;
            for (int o = 0; o < marker_count(ours) && !found; o++) {
                const cJSON *sa = cJSON_GetObjectItem(thread0(ours), "stringArray");
                int on = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(om, "name"), o)->valuedouble;
                if (strcmp(cJSON_GetArrayItem(sa, on)->valuestring, name) != 0)
                    continue;
                double ost = cJSON_GetArrayItem(cJSON_GetObjectItem(om, "startTime"), o)->valuedouble;
                const cJSON *oen = cJSON_GetArrayItem(cJSON_GetObjectItem(om, "endTime"), o);
                int ocat = (int)cJSON_GetArrayItem(cJSON_GetObjectItem(om, "category"), o)->valuedouble;
                if (fabs(ost - fst) > 0.5 || ocat != fcat || cJSON_IsNull(oen) != cJSON_IsNull(fen) ||
                    (!cJSON_IsNull(oen) && fabs(oen->valuedouble - fen->valuedouble) > 0.5))
                    continue;
                char *odata = cJSON_PrintUnformatted(cJSON_GetArrayItem(cJSON_GetObjectItem(om, "data"), o));
                found = strcmp(odata, fdata) == 0;
                free(odata);
            }
            ck_assert_msg(found, "missing %s", k);
            free(fdata);
            free((char *)name);
            compared++;
        }
        free(k);
    }
    ck_assert_int_ge(compared, 200);
    /* The Phase marker keeps its payload. */
    ck_assert_int_ge(find_marker(ours, "Phase|35.095|4173.391|1|{\"type\":\"Phase\",\"phase\":\"run-tests\"}"), 0);
    cJSON_Delete(final);
    cJSON_Delete(ours);
}
END_TEST

START_TEST(test_fixture_midrun_and_killed)
{
    const char *files[] = {"stream-midrun.jsonl", "stream-killed.jsonl"};
    for (size_t f = 0; f < 2; f++) {
        struct profile_end end = {.end_ms = -1};
        struct profile_stats st;
        size_t len;
        char *text = slurp(fixture(files[f]), &len);
        int lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += text[i] == '\n';
        free(text);
        cJSON *p = convert_file(fixture(files[f]), &end, &st, NULL);
        ck_assert_ptr_nonnull(p);
        check_structure(p);
        ck_assert_uint_eq(st.markers, (uint64_t)lines - 2);
        ck_assert_uint_eq(st.skipped_lines, 0);
        /* No end given: the last timestamp seen. */
        ck_assert(st.end_ms > 1000);
        ck_assert(fabs(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "meta"), "profilingEndTime")->valuedouble -
                       st.end_ms) < 0.001);
        cJSON_Delete(p);
    }
}
END_TEST

static const char head[] = "{\"type\":\"meta\",\"product\":\"p\",\"logicalCPUs\":2,\"categories\":["
                           "{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
                           "{\"name\":\"Phases\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
                           "{\"name\":\"Tasks\",\"color\":\"grey\",\"subcategories\":[\"Other\"]}]}\n"
                           "{\"type\":\"clock\",\"monotonicNs\":1000000000}\n";

static cJSON *convert_text(const char *body, const struct profile_end *end, struct profile_stats *st, int *ret)
{
    char *text;
    ck_assert_int_gt(asprintf(&text, "%s%s", head, body), 0);
    char *path = in_dir("s.jsonl");
    spit(path, text, strlen(text));
    free(text);
    return convert_file(path, end, st, ret);
}

START_TEST(test_torn_and_garbage)
{
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    cJSON *p = convert_text(
        "{\"type\":\"marker\",\"name\":\"a\",\"startTime\":1.0,\"endTime\":2.5,\"data\":{\"type\":\"Text\",\"text\":\"x\"}}\n"
        "garbage\n"
        "\n"
        "{\"type\":\"marker\",\"name\":\"b\",\"startTime\":1.0,\"endTime\":null,\"data\":{\"type\":\"Text\",\"text\":\"\xff\"}}\n"
        "{\"type\":\"marker\",\"name\":\"b\",\"startTime\":\"1\",\"endTime\":null,\"data\":null}\n"
        "{\"type\":\"marker\",\"name\":\"c\",\"startTime\":3,\"endTime\":null,\"data\":{\"type\":\"Text\",\"a\":[1,2,{\"b\":nul}]}}\n"
        "{\"type\":\"marker\",\"name\":\"d\",\"startTime\":3,\"endTime\":null,\"data\":{}} trailing\n"
        "{\"type\":\"future\",\"x\":1}\n"
        "{\"data\":{\"type\":\"Text\"},\"endTime\":null,\"startTime\":4.0,\"name\":\"A\\u0042\",\"type\":\"marker\","
        "\"category\":7}\n"
        "{\"type\":\"marker\",\"name\":\"AB\",\"startTime\":5.0,\"endTime\":null,\"data\":null,\"category\":2}\n"
        "{\"type\":\"marker\",\"name\":\"torn\",\"startTime\":9.0,\"endTime\":null,\"data\":{\"type\":\"Te",
        &end, &st, NULL);
    ck_assert_ptr_nonnull(p);
    check_structure(p);
    ck_assert_uint_eq(st.markers, 3);
    ck_assert_uint_eq(st.skipped_lines, 7);
    ck_assert_int_ge(find_marker(p, "a|1.000|2.500|0|{\"type\":\"Text\",\"text\":\"x\"}"), 0);
    /* Keys in any order; two spellings of one name are one string; category 7 is out of range. */
    ck_assert_int_ge(find_marker(p, "AB|4.000|null|0|{\"type\":\"Text\"}"), 0);
    ck_assert_int_ge(find_marker(p, "AB|5.000|null|2|null"), 0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(thread0(p), "stringArray")), 3);
    ck_assert(st.end_ms == 5.0);
    /* The thread line was missing: one is made up from meta. */
    ck_assert_str_eq(cJSON_GetObjectItem(thread0(p), "processName")->valuestring, "p");
    ck_assert_str_eq(cJSON_GetObjectItem(thread0(p), "pid")->valuestring, "0");
    cJSON_Delete(p);
}
END_TEST

/* The frames of sample i of thread th, innermost first, joined by " < ". */
static char *sample_frames(const cJSON *th, int i)
{
    const cJSON *sa = cJSON_GetObjectItem(th, "stringArray");
    const cJSON *st = cJSON_GetObjectItem(th, "stackTable");
    const cJSON *fr = cJSON_GetObjectItem(cJSON_GetObjectItem(th, "frameTable"), "func");
    const cJSON *fn = cJSON_GetObjectItem(cJSON_GetObjectItem(th, "funcTable"), "name");
    static char out[512];
    out[0] = '\0';
    const cJSON *k = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(th, "samples"), "stack"), i);
    for (int x = k->valueint; x >= 0;) {
        int f = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "frame"), x)->valueint;
        int u = cJSON_GetArrayItem(fr, f)->valueint;
        if (out[0])
            strcat(out, " < ");
        strcat(out, cJSON_GetArrayItem(sa, cJSON_GetArrayItem(fn, u)->valueint)->valuestring);
        const cJSON *pre = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "prefix"), x);
        ck_assert(cJSON_IsNull(pre) || pre->valueint < x);
        x = cJSON_IsNull(pre) ? -1 : pre->valueint;
    }
    return out;
}

START_TEST(test_dumped_processes)
{
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    cJSON *p = convert_text(
        "{\"type\":\"marker\",\"name\":\"a\",\"startTime\":1.0,\"endTime\":2.5,\"data\":{\"type\":\"Text\",\"text\":\"x\"}}\n"
        "{\"type\":\"stack\",\"pid\":100,\"ppid\":1,\"tid\":100,\"process\":\"./hung -x\",\"name\":\"hung\","
        "\"thread\":\"hung\",\"state\":\"S\",\"start\":0.5,\"threadStart\":0.5,\"time\":3.0,"
        "\"frames\":[\"wait\",\"loop\",\"main\"],\"files\":[null,\"/src/hung.c\",\"/src/hung.c\"],"
        "\"lines\":[null,12,30],\"libs\":[\"libc.so.6\",\"hung\",\"hung\"]}\n"
        "{\"type\":\"stack\",\"pid\":100,\"ppid\":1,\"tid\":101,\"process\":\"./hung -x\",\"name\":\"hung\","
        "\"thread\":\"worker\",\"state\":\"R\",\"start\":0.5,\"threadStart\":1.5,\"time\":3.0,"
        "\"frames\":[\"read\",\"loop\",\"main\"]}\n"
        "{\"type\":\"stack\",\"pid\":200,\"ppid\":100,\"tid\":200,\"process\":\"child\",\"name\":\"child\","
        "\"thread\":\"child\",\"time\":3.5,\"frames\":[\"poll\"]}\n"
        "{\"type\":\"stack\",\"pid\":300,\"tid\":300,\"time\":3.5}\n"
        "{\"type\":\"stack\",\"pid\":\"400\",\"tid\":400,\"frames\":[]}\n",
        &end, &st, NULL);
    ck_assert_ptr_nonnull(p);
    check_structure(p);
    /* the two lines without frames or with a pid that is not a number are skipped */
    ck_assert_uint_eq(st.skipped_lines, 2);
    const cJSON *threads = cJSON_GetObjectItem(p, "threads");
    /* a thread of the profile per OS thread, a process's together, its main thread first */
    ck_assert_int_eq(cJSON_GetArraySize(threads), 4);
    const cJSON *a = cJSON_GetArrayItem(threads, 1), *w = cJSON_GetArrayItem(threads, 2),
                *b = cJSON_GetArrayItem(threads, 3);
    ck_assert_str_eq(cJSON_GetObjectItem(a, "pid")->valuestring, "100");
    ck_assert_int_eq(cJSON_GetObjectItem(a, "tid")->valueint, 100);
    ck_assert_str_eq(cJSON_GetObjectItem(a, "processName")->valuestring, "./hung -x");
    ck_assert_str_eq(cJSON_GetObjectItem(a, "name")->valuestring, "hung");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(a, "isMainThread")));
    ck_assert_str_eq(cJSON_GetObjectItem(w, "pid")->valuestring, "100");
    ck_assert_int_eq(cJSON_GetObjectItem(w, "tid")->valueint, 101);
    ck_assert_str_eq(cJSON_GetObjectItem(w, "name")->valuestring, "worker");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(w, "isMainThread")));
    /* the process's life and the thread's: from their starts, not the dump's time */
    ck_assert(cJSON_GetObjectItem(a, "processStartupTime")->valuedouble == 0.5);
    ck_assert(cJSON_GetObjectItem(a, "registerTime")->valuedouble == 0.5);
    ck_assert(cJSON_GetObjectItem(w, "processStartupTime")->valuedouble == 0.5);
    ck_assert(cJSON_GetObjectItem(w, "registerTime")->valuedouble == 1.5);
    /* a line without them (an older stream): the dump's time */
    ck_assert(cJSON_GetObjectItem(b, "registerTime")->valuedouble == 3.5);
    /* one sample per stack taken, the thread's root outermost; before it, where the thread
     * started, one saying nothing is known of that time, of category Other where the others are
     * the thread's state, in its frame too (the front-end takes a stack's category from there) */
    const cJSON *as = cJSON_GetObjectItem(a, "samples");
    ck_assert_int_eq(cJSON_GetObjectItem(as, "length")->valueint, 2);
    ck_assert_str_eq(sample_frames(a, 0), "(not sampled before the dump) < thread 100 hung");
    ck_assert(cJSON_GetArrayItem(cJSON_GetObjectItem(as, "time"), 0)->valuedouble == 0.5);
    ck_assert_str_eq(sample_frames(a, 1), "wait < loop < main < thread 100 hung");
    ck_assert(cJSON_GetArrayItem(cJSON_GetObjectItem(as, "time"), 1)->valuedouble == 3.0);
    ck_assert_str_eq(sample_frames(w, 1), "read < loop < main < thread 101 worker");
    ck_assert(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(w, "samples"), "time"), 0)->valuedouble == 1.5);
    const cJSON *afc = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "frameTable"), "category");
    for (int f = 0; f < cJSON_GetArraySize(afc); f++)
        ck_assert(cJSON_IsNumber(cJSON_GetArrayItem(afc, f)));
    /* a function per name, file:line and library: the source and library of loop and main */
    const cJSON *ft = cJSON_GetObjectItem(a, "funcTable"), *sa = cJSON_GetObjectItem(a, "stringArray");
    const cJSON *rt = cJSON_GetObjectItem(a, "resourceTable");
    ck_assert_int_eq(cJSON_GetObjectItem(ft, "length")->valueint, 5);
    ck_assert_int_eq(cJSON_GetObjectItem(rt, "length")->valueint, 2);
    bool loop_seen = false;
    for (int f = 0; f < 5; f++) {
        const char *name = cJSON_GetArrayItem(sa, cJSON_GetArrayItem(cJSON_GetObjectItem(ft, "name"), f)->valueint)->valuestring;
        const cJSON *file = cJSON_GetArrayItem(cJSON_GetObjectItem(ft, "fileName"), f);
        const cJSON *line = cJSON_GetArrayItem(cJSON_GetObjectItem(ft, "lineNumber"), f);
        int res = cJSON_GetArrayItem(cJSON_GetObjectItem(ft, "resource"), f)->valueint;
        const char *lib = res >= 0 ? cJSON_GetArrayItem(sa, cJSON_GetArrayItem(cJSON_GetObjectItem(rt, "name"), res)->valueint)->valuestring : "-";
        if (strcmp(name, "loop") == 0) {
            loop_seen = true;
            ck_assert_str_eq(cJSON_GetArrayItem(sa, file->valueint)->valuestring, "/src/hung.c");
            ck_assert_int_eq(line->valueint, 12);
            ck_assert_str_eq(lib, "hung");
        } else if (strcmp(name, "wait") == 0) {
            ck_assert(cJSON_IsNull(file) && cJSON_IsNull(line));
            ck_assert_str_eq(lib, "libc.so.6");
        }
    }
    ck_assert(loop_seen);
    /* this stream's meta has no state categories: Other */
    ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(w, "stackTable"), "category"), 0)->valueint, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(b, "pid")->valuestring, "200");
    /* a line without the thread's start (an older stream): its stack only */
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "samples"), "length")->valueint, 1);
    ck_assert_str_eq(sample_frames(b, 0), "poll < thread 200 child");
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "markers"), "length")->valueint, 0);
    /* every thread shown, the run's selected */
    const cJSON *meta = cJSON_GetObjectItem(p, "meta");
    char *v = cJSON_PrintUnformatted(cJSON_GetObjectItem(meta, "initialVisibleThreads"));
    ck_assert_str_eq(v, "[0,1,2,3]");
    free(v);
    v = cJSON_PrintUnformatted(cJSON_GetObjectItem(meta, "initialSelectedThreads"));
    ck_assert_str_eq(v, "[0]");
    free(v);
    cJSON_Delete(p);
    /* without stack lines: one thread, no such keys */
    p = convert_text("{\"type\":\"marker\",\"name\":\"a\",\"startTime\":1.0,\"endTime\":null,\"data\":null}\n", &end, &st,
                     NULL);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p, "threads")), 1);
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "meta"), "initialVisibleThreads"));
    cJSON_Delete(p);
}
END_TEST

START_TEST(test_not_a_stream)
{
    int r;
    struct profile_end end = {.end_ms = -1};
    const char *bad[] = {"", "garbage\n", "{\"meta\":{}}\n", "{\"type\":\"meta\",\"x\":\n", "{\"type\":\"thread\"}\n"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        char *path = in_dir("bad");
        spit(path, bad[i], strlen(bad[i]));
        ck_assert_ptr_null(convert_file(path, &end, NULL, &r));
        ck_assert_int_eq(r, -EINVAL);
    }
}
END_TEST

START_TEST(test_open_state_closed)
{
    struct profile_end end = {.end_ms = 50.0, .open_status = "TIMEOUT"};
    struct profile_stats st;
    cJSON *p = convert_text(
        /* closed normally: marker first, then close */
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t1\",\"name\":\"test\",\"startNs\":1010000000,\"category\":2,"
        "\"data\":{\"type\":\"Test\",\"test\":\"t1\",\"name\":\"t1\"}}\n"
        "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":10.0,\"endTime\":20.0,\"data\":{\"type\":\"Test\","
        "\"test\":\"t1\",\"status\":\"PASS\"},\"category\":2}\n"
        "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"t1\"}\n"
        /* still open at the end */
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t2\",\"name\":\"test\",\"startNs\":1020000000,\"category\":2,"
        "\"data\":{\"type\":\"Test\",\"test\":\"t2\",\"name\":\"t2\"}}\n"
        "{\"type\":\"open\",\"kind\":\"phase\",\"key\":\"run\",\"name\":\"Phase\",\"startTime\":5.5,\"category\":1,"
        "\"data\":{\"type\":\"Phase\",\"phase\":\"run\"}}\n"
        /* the same key opened twice: a close ends the most recent one */
        "{\"type\":\"open\",\"kind\":\"suite\",\"key\":\"s\",\"name\":\"suite\",\"startTime\":1.0,\"data\":null}\n"
        "{\"type\":\"open\",\"kind\":\"suite\",\"key\":\"s\",\"name\":\"suite\",\"startTime\":2.0,\"data\":null}\n"
        "{\"type\":\"close\",\"kind\":\"suite\",\"key\":\"s\"}\n"
        /* a test whose payload already has a status and an open without data */
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t3\",\"name\":\"test\",\"startTime\":30.0,"
        "\"data\":{\"type\":\"Test\",\"status\":\"CRASH\"}}\n"
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t4\",\"name\":\"test\",\"startTime\":31.0}\n"
        /* an open that is not usable: no start */
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t5\",\"name\":\"test\"}\n"
        "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"never-opened\"}\n",
        &end, &st, NULL);
    ck_assert_ptr_nonnull(p);
    check_structure(p);
    ck_assert_uint_eq(st.closed_open, 5);
    ck_assert_uint_eq(st.markers, 6);
    ck_assert_uint_eq(st.skipped_lines, 1);
    ck_assert_int_ge(find_marker(p, "test|10.000|20.000|2|{\"type\":\"Test\",\"test\":\"t1\",\"status\":\"PASS\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|20.000|50.000|2|{\"type\":\"Test\",\"test\":\"t2\",\"name\":\"t2\","
                                    "\"status\":\"TIMEOUT\",\"color\":\"purple\"}"),
                     0);
    ck_assert_int_ge(find_marker(p, "Phase|5.500|50.000|1|{\"type\":\"Phase\",\"phase\":\"run\"}"), 0);
    ck_assert_int_ge(find_marker(p, "suite|1.000|50.000|0|null"), 0);
    ck_assert_int_ge(find_marker(p, "test|30.000|50.000|0|{\"type\":\"Test\",\"status\":\"CRASH\",\"color\":\"purple\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|31.000|50.000|0|{\"type\":\"Test\",\"status\":\"TIMEOUT\",\"color\":\"purple\"}"), 0);
    cJSON_Delete(p);

    /* Recovery semantics: INCOMPLETE at the last timestamp seen. */
    struct profile_end rec = {.end_ms = -1, .open_status = "INCOMPLETE"};
    p = convert_text("{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t\",\"name\":\"test\",\"startNs\":1001000000,"
                     "\"data\":{\"type\":\"Test\"}}\n"
                     "{\"type\":\"marker\",\"name\":\"CPU Use\",\"startTime\":2.0,\"endTime\":7.25,\"data\":null}\n",
                     &rec, &st, NULL);
    ck_assert_int_ge(find_marker(p, "test|1.000|7.250|0|{\"type\":\"Test\",\"status\":\"INCOMPLETE\",\"color\":\"orange\"}"), 0);
    cJSON_Delete(p);
}
END_TEST

START_TEST(test_phase_cpu_percent)
{
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    cJSON *p = convert_text(
        "{\"type\":\"marker\",\"name\":\"Phase\",\"startTime\":0.0,\"endTime\":1000.0,\"data\":{\"type\":\"Phase\","
        "\"phase\":\"a\",\"cpuTime\":500},\"category\":1}\n"
        "{\"type\":\"marker\",\"name\":\"Phase\",\"startTime\":0.0,\"endTime\":1000.0,\"data\":{\"type\":\"Phase\","
        "\"phase\":\"b\",\"cpuTime\":500,\"cpuPercent\":\"1.0%\"},\"category\":1}\n",
        &end, &st, NULL);
    ck_assert_int_ge(find_marker(p, "Phase|0.000|1000.000|1|{\"type\":\"Phase\",\"phase\":\"a\",\"cpuTime\":500,"
                                    "\"cpuPercent\":\"25.0%\"}"),
                     0);
    ck_assert_int_ge(find_marker(p, "Phase|0.000|1000.000|1|{\"type\":\"Phase\",\"phase\":\"b\",\"cpuTime\":500,"
                                    "\"cpuPercent\":\"1.0%\"}"),
                     0);
    cJSON_Delete(p);
}
END_TEST

/* Counters from counter lines and the markers they name; what the converter closes itself is
 * costed from them; a marker ending before it starts ends where it starts. */
START_TEST(test_counters_and_costs)
{
    struct profile_end end = {.end_ms = 300, .open_status = "TIMEOUT"};
    struct profile_stats st;
    cJSON *p = convert_text(
        "{\"type\":\"counter\",\"name\":\"Tree CPU\",\"category\":\"CPU\",\"description\":\"d\","
        "\"marker\":\"Tree CPU\",\"key\":\"cpuTime\",\"kind\":\"amount\",\"display\":{\"graphType\":\"line-rate\"}}\n"
        "{\"type\":\"counter\",\"name\":\"Tree Memory\",\"category\":\"Memory\",\"description\":\"d\","
        "\"marker\":\"Tree Memory\",\"key\":\"rss\",\"kind\":\"level\"}\n"
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t\",\"name\":\"test\",\"startTime\":150,\"cost\":true,"
        "\"data\":{\"type\":\"Test\",\"test\":\"t\",\"name\":\"t\"}}\n"
        "{\"type\":\"marker\",\"name\":\"Tree CPU\",\"startTime\":0.0,\"endTime\":100.0,\"data\":{\"type\":\"TreeCPU\",\"cpuTime\":10}}\n"
        "{\"type\":\"marker\",\"name\":\"Tree Memory\",\"startTime\":0.0,\"endTime\":100.0,\"data\":{\"type\":\"TreeMem\",\"rss\":1000}}\n"
        "{\"type\":\"marker\",\"name\":\"Tree CPU\",\"startTime\":100.0,\"endTime\":200.0,\"data\":{\"type\":\"TreeCPU\",\"cpuTime\":80}}\n"
        "{\"type\":\"marker\",\"name\":\"Tree Memory\",\"startTime\":100.0,\"endTime\":200.0,\"data\":{\"type\":\"TreeMem\",\"rss\":5000}}\n"
        "{\"type\":\"marker\",\"name\":\"Tree CPU\",\"startTime\":200.0,\"endTime\":300.0,\"data\":{\"type\":\"TreeCPU\",\"cpuTime\":40}}\n"
        "{\"type\":\"marker\",\"name\":\"Tree Memory\",\"startTime\":200.0,\"endTime\":300.0,\"data\":{\"type\":\"TreeMem\",\"rss\":2000}}\n"
        "{\"type\":\"marker\",\"name\":\"back\",\"startTime\":50.0,\"endTime\":40.0,\"data\":null}\n",
        &end, &st, NULL);
    ck_assert_ptr_nonnull(p);
    check_structure(p);
    ck_assert_uint_eq(st.counters, 2);
    const cJSON *counters = cJSON_GetObjectItem(p, "counters");
    const cJSON *cpu = cJSON_GetArrayItem(counters, 0), *mem = cJSON_GetArrayItem(counters, 1);
    ck_assert_str_eq(cJSON_GetObjectItem(cpu, "name")->valuestring, "Tree CPU");
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cpu, "display"), "graphType")->valuestring, "line-rate");
    const cJSON *cs = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cpu, "sampleGroups"), 0), "samples");
    char *txt = cJSON_PrintUnformatted(cs);
    /* from a zero at the first interval's start: the front-end draws nothing of a counter's first
     * sample, and the 10 ms of 0..100 must be drawn */
    ck_assert_str_eq(txt, "{\"time\":[0,100,200,300],\"count\":[0,10,80,40],\"length\":4}");
    free(txt);
    /* a level: the changes, from zero, so that their sum is the level */
    const cJSON *ms = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(mem, "sampleGroups"), 0), "samples");
    txt = cJSON_PrintUnformatted(ms);
    ck_assert_str_eq(txt, "{\"time\":[0,100,200,300],\"count\":[0,1000,4000,-3000],\"length\":4}");
    free(txt);
    /* The open test, closed at 300: half of the 80 ms of 100..200 and the 40 of 200..300; its peak
     * is the highest sample inside it. */
    ck_assert_int_ge(find_marker(p, "test|150.000|300.000|0|{\"type\":\"Test\",\"test\":\"t\",\"name\":\"t\","
                                    "\"status\":\"TIMEOUT\",\"color\":\"purple\",\"cpuTime\":80,\"maxRSS\":5000}"),
                     0);
    ck_assert_int_ge(find_marker(p, "back|50.000|50.000|0|null"), 0);
    cJSON_Delete(p);
}
END_TEST

START_TEST(test_long_line_skipped)
{
    size_t big = PROFILE_MAX_LINE + 100;
    char *body = malloc(big + 512);
    int n = sprintf(body, "{\"type\":\"marker\",\"name\":\"big\",\"startTime\":1.0,\"endTime\":null,\"data\":"
                          "{\"type\":\"Text\",\"text\":\"");
    memset(body + n, 'x', big);
    n += (int)big;
    n += sprintf(body + n, "\"}}\n{\"type\":\"marker\",\"name\":\"small\",\"startTime\":2.0,\"endTime\":null,"
                           "\"data\":null}\n");
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    cJSON *p = convert_text(body, &end, &st, NULL);
    free(body);
    ck_assert_uint_eq(st.markers, 1);
    ck_assert_uint_eq(st.skipped_lines, 1);
    ck_assert_int_ge(find_marker(p, "small|2.000|null|0|null"), 0);
    cJSON_Delete(p);
}
END_TEST

/* A large payload that straddles the reader's chunks and the copy window. */
START_TEST(test_large_payloads)
{
    size_t big = 3u << 20;
    char *body = malloc(2 * big + 1024);
    int n = 0;
    for (int k = 0; k < 2; k++) {
        n += sprintf(body + n, "{\"type\":\"marker\",\"name\":\"big\",\"startTime\":1.0,\"endTime\":null,\"data\":"
                               "{\"type\":\"Text\",\"text\":\"");
        memset(body + n, 'a' + k, big);
        n += (int)big;
        n += sprintf(body + n, "\"}}\n");
    }
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    cJSON *p = convert_text(body, &end, &st, NULL);
    free(body);
    ck_assert_uint_eq(st.markers, 2);
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(thread0(p), "markers"), "data"), 1);
    const char *t = cJSON_GetObjectItem(d, "text")->valuestring;
    ck_assert_uint_eq(strlen(t), big);
    ck_assert(t[0] == 'b' && t[big - 1] == 'b');
    cJSON_Delete(p);
}
END_TEST

/* ---- following a growing stream --------------------------------------------------------- */

/* profile_convert's output for the file at path, as text. */
static char *convert_to_text(const char *path, const struct profile_end *end, struct profile_stats *st)
{
    int in = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(in, 0);
    char *out_path = in_dir("oneshot.json");
    int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_int_eq(profile_convert(in, out, end, st), 0);
    close(in);
    close(out);
    return slurp(out_path, NULL);
}

/* A follower's profile, written to a fresh file, as text. */
static char *follower_text(struct profile_conv *pc, const struct profile_end *end, struct profile_stats *st)
{
    char *out_path = in_dir("follow.json");
    int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ck_assert_int_ge(out, 0);
    ck_assert_int_eq(profile_conv_write(pc, out, end, st), 0);
    close(out);
    return slurp(out_path, NULL);
}

/* Grow a copy of text chunk bytes at a time (lines cut anywhere), updating a follower after each
 * chunk and writing a profile at some of them; every profile must be byte for byte the one-shot
 * conversion of the same prefix (cut back to its last newline: the follower leaves an unterminated
 * line for later and counts it as one damaged line). */
static void check_follow_mode(const char *text, size_t len, size_t chunk, size_t write_every, bool fed)
{
    struct profile_end ends[] = {{.end_ms = -1, .open_status = "INCOMPLETE"}, {.end_ms = 1e6, .open_status = "TIMEOUT"}};
    char *grow = strdup(in_dir("grow.jsonl")), *prefix = strdup(in_dir("prefix.jsonl"));
    int fd = open(grow, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    /* The follower needs the meta line before it can start: write up to the first newline. */
    size_t at = (size_t)((const char *)memchr(text, '\n', len) - text) + 1;
    ck_assert_int_eq(write_all(fd, text, at), 0);
    struct profile_conv *pc;
    ck_assert_int_eq(profile_conv_new(fd, &pc), 0);
    if (fed)
        ck_assert_int_eq(profile_conv_fed(pc), 0);
    size_t step = 0;
    while (at < len) {
        size_t n = MIN(chunk, len - at);
        ck_assert_int_eq(write_all(fd, text + at, n), 0);
        if (fed) /* in two runs, as a short write would land */
            ck_assert_int_eq(profile_conv_feed(pc, text + at, n / 2) | profile_conv_feed(pc, text + at + n / 2, n - n / 2), 0);
        at += n;
        ck_assert_int_eq(profile_conv_update(pc), 0);
        if (++step % write_every && at < len)
            continue;
        size_t cut = at;
        while (cut > 0 && text[cut - 1] != '\n')
            cut--;
        spit(prefix, text, cut);
        for (size_t e = 0; e < ARRAY_SIZE(ends); e++) {
            struct profile_stats a, b;
            char *want = convert_to_text(prefix, &ends[e], &a);
            char *got = follower_text(pc, &ends[e], &b);
            ck_assert_msg(strcmp(want, got) == 0, "follower differs after %zu bytes (chunk %zu)", at, chunk);
            ck_assert_uint_eq(a.markers, b.markers);
            ck_assert_uint_eq(a.closed_open, b.closed_open);
            ck_assert_uint_eq(a.skipped_lines + (cut < at), b.skipped_lines);
            free(want);
            free(got);
        }
    }
    profile_conv_free(pc);
    close(fd);
    free(grow);
    free(prefix);
}

/* Both ways of following: reading the file back, and fed by the writer (profile.h). */
static void check_follow(const char *text, size_t len, size_t chunk, size_t write_every)
{
    check_follow_mode(text, len, chunk, write_every, false);
    check_follow_mode(text, len, chunk, write_every, true);
}

START_TEST(test_follow_fixtures)
{
    const char *files[] = {"stream-complete.jsonl", "stream-midrun.jsonl", "stream-killed.jsonl"};
    for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
        size_t len;
        char *text = slurp(fixture(files[f]), &len);
        check_follow(text, len, 97, 40);
        check_follow(text, len, 4096 + 13, 3);
        check_follow(text, len, len, 1);
        free(text);
    }
}
END_TEST

/* Late messages (profile.h, LATE MESSAGES): a test that went otherwise than expected and has no
 * message gets the first message line that names it, in the order the tests ended; the rest are
 * passed by. The same on a follower fed as the stream grows. */
#define LATE_TEST(start, name, status, color, more)                                                \
    "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":" start ",\"endTime\":" start ",\"category\":2,"   \
    "\"data\":{\"type\":\"Test\",\"test\":\"" name "\",\"status\":\"" status "\"" more ",\"color\":\"" color "\"}}\n"
#define LATE_MSG(name, text) "{\"type\":\"message\",\"test\":\"" name "\",\"message\":\"" text "\"}\n"
static const char late_body[] =
    LATE_TEST("1.0", "a", "FAIL", "orange", "")
    LATE_TEST("2.0", "ok", "PASS", "green", "")
    LATE_TEST("3.0", "own", "FAIL", "orange", ",\"message\":\"its own\"")
    LATE_TEST("4.0", "twice", "FAIL", "orange", "")
    LATE_TEST("5.0", "twice", "ERROR", "orange", "")
    LATE_TEST("6.0", "caf\\u00e9", "TIMEOUT", "yellow", "")
    LATE_TEST("7.0", "goes on", "CRASH", "red", ",\"message\":\"exit status 1\"")
    LATE_MSG("nobody", "no test of that name")
    LATE_MSG("a", "assert 1 == 2\\nwhere 1 = f()")
    LATE_MSG("ok", "a pass keeps no message")
    LATE_MSG("own", "a second text")
    LATE_MSG("own", "its own, and more") /* not a next line of its text */
    LATE_MSG("goes on", "exit status 1\\nits output") /* its first line, then the rest */
    LATE_MSG("a", "the first text wins")
    LATE_MSG("twice", "the first of them")
    LATE_MSG("twice", "the second")
    LATE_MSG("caf\xc3\xa9", "one name, two spellings")
    "{\"type\":\"message\",\"message\":\"no test\"}\n";

START_TEST(test_late_messages)
{
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    cJSON *p = convert_text(late_body, &end, &st, NULL);
    ck_assert_ptr_nonnull(p);
    check_structure(p);
    ck_assert_uint_eq(st.markers, 7);
    ck_assert_uint_eq(st.skipped_lines, 1); /* the message line without a test */
    ck_assert_int_ge(find_marker(p, "test|1.000|1.000|2|{\"type\":\"Test\",\"test\":\"a\",\"status\":\"FAIL\","
                                    "\"color\":\"orange\",\"message\":\"assert 1 == 2\\nwhere 1 = f()\","
                                    /* the front-end shows a string on one line: its lines as a list */
                                    "\"messageLines\":[\"assert 1 == 2\",\"where 1 = f()\"]}"), 0);
    ck_assert_int_ge(find_marker(p, "test|2.000|2.000|2|{\"type\":\"Test\",\"test\":\"ok\",\"status\":\"PASS\","
                                    "\"color\":\"green\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|3.000|3.000|2|{\"type\":\"Test\",\"test\":\"own\",\"status\":\"FAIL\","
                                    "\"message\":\"its own\",\"color\":\"orange\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|4.000|4.000|2|{\"type\":\"Test\",\"test\":\"twice\",\"status\":\"FAIL\","
                                    "\"color\":\"orange\",\"message\":\"the first of them\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|5.000|5.000|2|{\"type\":\"Test\",\"test\":\"twice\",\"status\":\"ERROR\","
                                    "\"color\":\"orange\",\"message\":\"the second\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|6.000|6.000|2|{\"type\":\"Test\",\"test\":\"caf\xc3\xa9\",\"status\":"
                                    "\"TIMEOUT\",\"color\":\"yellow\",\"message\":\"one name, two spellings\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|7.000|7.000|2|{\"type\":\"Test\",\"test\":\"goes on\",\"status\":"
                                    "\"CRASH\",\"color\":\"red\",\"message\":\"exit status 1\\nits output\","
                                    "\"messageLines\":[\"exit status 1\",\"its output\"]}"), 0);
    cJSON_Delete(p);
    char *text;
    ck_assert_int_gt(asprintf(&text, "%s%s", head, late_body), 0);
    check_follow(text, strlen(text), 61, 2);
    free(text);
}
END_TEST

/* The writer's own marker lines, fed (profile.h): taken in the writer's layout without scanning
 * their payloads, to the very profile a one-shot conversion makes of the file, whatever the
 * category, a payload whose own last member is a "category", null data and end, escaped names,
 * negative times; lines that only look like that layout are left to the full check. */
static const char layout_body[] =
    "{\"type\":\"marker\",\"name\":\"CPU Use\",\"startTime\":1.5,\"endTime\":2.5,\"data\":{\"type\":\"CPU\","
    "\"cpuPercent\":\"5.0%\"}}\n"
    "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":3,\"endTime\":4.25,\"data\":{\"type\":\"Test\","
    "\"test\":\"a\\\"b}\",\"category\":7},\"category\":2}\n"
    "{\"type\":\"marker\",\"name\":\"caf\\u00e9\",\"startTime\":-1.5,\"endTime\":null,\"data\":null,\"category\":1}\n"
    "{\"type\":\"marker\",\"name\":\"x\",\"startTime\":5,\"endTime\":6,\"data\":null}\n"
    "{\"type\":\"marker\",\"name\":\"e\",\"startTime\":7,\"endTime\":8,\"data\":{},\"category\":2}\n"
    "{\"type\":\"marker\",\"name\":\"n\",\"startTime\":01.5,\"endTime\":null,\"data\":null}\n"
    "{\"type\":\"marker\",\"name\":\"n\",\"startTime\":-.5,\"endTime\":null,\"data\":null}\n"
    "{\"type\":\"marker\",\"name\":\"n\",\"startTime\":2.,\"endTime\":null,\"data\":null}\n"
    "{\"type\":\"marker\",\"name\":\"n\",\"startTime\":1e3,\"endTime\":-0.25,\"data\":null}\n"
    "{\"type\":\"marker\",\"name\":\"n\",\"startTime\":0.5,\"endTime\":1234567890123.4567,\"data\":null}\n"
    "{\"type\":\"marker\",\"name\":\"x\",\"startTime\":5,\"endTime\":6,\"data\":{\"k\":1},\"category\":}\n"
    "{\"type\":\"marker\",\"name\":\"x\",\"startTime\":5,\"endTime\":6,\"data\":{\"k\":1},\"category\":12}x}\n"
    "{\"type\":\"marker\",\"name\":\"x\",\"startTime\":5,\"endTime\":6,\"data\":7}\n"
    "{\"type\":\"marker\",\"name\":\"x\",\"startTime\":5,\"endTime\":6,\"data\":{\"k\":1},\"category\":2,\"z\":1}\n";

/* A line glued on to one the writer could not finish: in the writer's layout, its payload broken. */
static const char glued_line[] =
    "{\"type\":\"marker\",\"name\":\"t\",\"startTime\":1,\"endTime\":2,\"data\":{\"type\":\"Text\",\"te"
    "{\"type\":\"marker\",\"name\":\"u\",\"startTime\":3,\"endTime\":4,\"data\":{\"type\":\"Text\",\"text\":\"b\"}}\n";

/* Markers of a follower fed text after the head, told (or not) before it that a line was lost. */
static uint64_t fed_markers(const char *text, bool distrust, char **ret_profile)
{
    int fd = open(in_dir("fed.jsonl"), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write_all(fd, head, strlen(head)), 0);
    struct profile_conv *pc;
    ck_assert_int_eq(profile_conv_new(fd, &pc), 0);
    ck_assert_int_eq(profile_conv_fed(pc), 0);
    if (distrust)
        ck_assert_int_eq(profile_conv_feed(pc, NULL, 0), 0);
    ck_assert_int_eq(write_all(fd, text, strlen(text)), 0);
    ck_assert_int_eq(profile_conv_feed(pc, text, strlen(text)), 0);
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    *ret_profile = follower_text(pc, &end, &st);
    profile_conv_free(pc);
    close(fd);
    return st.markers;
}

START_TEST(test_fed_writer_layout)
{
    char *text;
    ck_assert_int_gt(asprintf(&text, "%s%s", head, layout_body), 0);
    check_follow(text, strlen(text), 53, 2);
    check_follow(text, strlen(text), strlen(text), 1);
    struct profile_end end = {.end_ms = -1};
    struct profile_stats st;
    cJSON *p = convert_text(layout_body, &end, &st, NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(st.markers, 8); /* the last line is valid, if not in the writer's layout */
    ck_assert_uint_eq(st.skipped_lines, 6);
    ck_assert_int_ge(find_marker(p, "test|3.000|4.250|2|{\"type\":\"Test\",\"test\":\"a\\\"b}\",\"category\":7}"), 0);
    cJSON_Delete(p);
    free(text);

    /* Trusted, the glued line's payload is not looked at; told, the follower checks it and drops
     * it, as the one-shot conversion of the same file does. */
    char *profile, *want;
    ck_assert_uint_eq(fed_markers(glued_line, false, &profile), 1);
    free(profile);
    ck_assert_uint_eq(fed_markers(glued_line, true, &profile), 0);
    want = convert_to_text(in_dir("fed.jsonl"), &end, &st);
    ck_assert_str_eq(profile, want);
    ck_assert_uint_eq(st.skipped_lines, 1);
    free(profile);
    free(want);
}
END_TEST

/* State lines across updates and repeated writes: an item a mid-run write closed as TIMEOUT is
 * still open for the follower, and ends normally later; nested opens of one key; garbage; a line
 * longer than the follower's buffer, and one longer than any line may be. */
START_TEST(test_follow_state_and_long_lines)
{
    static const char body[] =
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t1\",\"name\":\"test\",\"startNs\":1010000000,\"category\":2,"
        "\"data\":{\"type\":\"Test\",\"test\":\"t1\"}}\n"
        "{\"type\":\"open\",\"kind\":\"suite\",\"key\":\"s\",\"name\":\"suite\",\"startTime\":1.0,\"data\":null}\n"
        "{\"type\":\"open\",\"kind\":\"suite\",\"key\":\"s\",\"name\":\"suite\",\"startTime\":2.0,\"data\":null}\n"
        "garbage\n"
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t2\",\"name\":\"test\",\"startTime\":3.0}\n"
        "{\"type\":\"marker\",\"name\":\"test\",\"startTime\":10.0,\"endTime\":20.0,\"data\":{\"type\":\"Test\","
        "\"test\":\"t1\",\"status\":\"PASS\"},\"category\":2}\n"
        "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"t1\"}\n"
        "{\"type\":\"close\",\"kind\":\"suite\",\"key\":\"s\"}\n"
        "{\"type\":\"marker\",\"name\":\"Phase\",\"startTime\":0.0,\"endTime\":1000.0,\"data\":{\"type\":\"Phase\","
        "\"phase\":\"a\",\"cpuTime\":500},\"category\":1}\n"
        "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"never-opened\"}\n";
    size_t mid = 300u << 10, huge = PROFILE_MAX_LINE + 10;
    size_t cap = strlen(head) + strlen(body) + mid + huge + 1024;
    char *text = malloc(cap);
    size_t n = (size_t)sprintf(text, "%s%s", head, body);
    n += (size_t)sprintf(text + n, "{\"type\":\"marker\",\"name\":\"mid\",\"startTime\":30.0,\"endTime\":null,"
                                   "\"data\":{\"type\":\"Text\",\"text\":\"");
    memset(text + n, 'm', mid);
    n += mid;
    n += (size_t)sprintf(text + n, "\"}}\n{\"type\":\"marker\",\"name\":\"huge\",\"startTime\":31.0,\"endTime\":null,"
                                   "\"data\":{\"type\":\"Text\",\"text\":\"");
    memset(text + n, 'h', huge);
    n += huge;
    n += (size_t)sprintf(text + n, "\"}}\n{\"type\":\"close\",\"kind\":\"test\",\"key\":\"t2\"}\n"
                                   "{\"type\":\"marker\",\"name\":\"last\",\"startTime\":40.0,\"endTime\":null,"
                                   "\"data\":null}\n");
    ck_assert_uint_lt(n, cap);
    check_follow(text, strlen(head) + strlen(body), 61, 1);
    check_follow(text, n, 1u << 20, 1);
    free(text);
}
END_TEST

/* The marker limit (profile.h): past maxMarkers expected passes are left out, past twice it all
 * but the run's end; open tests still close; the profile says what it left out, and a follower
 * writing again and again says it once. */
START_TEST(test_marker_limit)
{
#define MK(name, t, data) "{\"type\":\"marker\",\"name\":\"" name "\",\"startTime\":" t ",\"endTime\":null,\"data\":" data "}\n"
#define GREEN "{\"type\":\"Test\",\"color\":\"green\"}"
#define RED "{\"type\":\"Test\",\"color\":\"red\"}"
    static const char body[] =
        MK("pass", "1.0", GREEN) MK("pass", "2.0", GREEN) MK("pass", "3.0", GREEN)
        MK("routine-left-out", "4.0", GREEN)          /* the limit (3) is reached: left out */
        MK("fail", "5.0", RED) MK("fail", "6.0", RED) /* kept up to twice the limit */
        MK("process", "7.0", "{\"type\":\"Process\"}") /* no colour: not routine, kept (6th) */
        MK("other-left-out", "8.0", RED)               /* twice the limit: left out */
        MK("pass", "9.0", GREEN)                       /* left out */
        MK("command", "10.0", "{\"type\":\"Command\",\"cmd\":\"x\"}") /* the run's end: kept */
        "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t\",\"name\":\"test\",\"startTime\":11.0}\n";
#undef MK
#undef GREEN
#undef RED
    char *text;
    ck_assert_int_gt(asprintf(&text, "{\"type\":\"meta\",\"maxMarkers\":3,%s%s", head + strlen("{\"type\":\"meta\","),
                              body), 0);
    char *path = in_dir("limit.jsonl");
    spit(path, text, strlen(text));
    struct profile_end end = {.end_ms = 20.0, .open_status = "TIMEOUT"};
    struct profile_stats st;
    cJSON *p = convert_file(path, &end, &st, NULL);
    check_structure(p);
    ck_assert_uint_eq(st.left_out, 3);
    ck_assert_uint_eq(st.markers, 9); /* 3 passes, 2 failures, process, command, the open test, the note */
    ck_assert_int_ge(find_marker(p, "fail|6.000|null|0|{\"type\":\"Test\",\"color\":\"red\"}"), 0);
    ck_assert_int_ge(find_marker(p, "command|10.000|null|0|{\"type\":\"Command\",\"cmd\":\"x\"}"), 0);
    ck_assert_int_ge(find_marker(p, "test|11.000|20.000|0|{\"type\":\"Test\",\"status\":\"TIMEOUT\",\"color\":\"purple\"}"), 0);
    ck_assert_int_ge(find_marker(p, "markers left out|20.000|null|0|{\"type\":\"Warning\",\"message\":\"3 markers "
                                    "past the limit of 3 were left out (2 of them expected passes)\","
                                    "\"color\":\"orange\"}"),
                     0);
    ck_assert_int_lt(find_marker(p, "pass|9.000|null|0|{\"type\":\"Test\",\"color\":\"green\"}"), 0);
    /* what was left out is not named in the string table either */
    const cJSON *sa = cJSON_GetObjectItem(thread0(p), "stringArray");
    for (int i = 0; i < cJSON_GetArraySize(sa); i++)
        ck_assert(!strstr(cJSON_GetArrayItem(sa, i)->valuestring, "left-out"));
    /* the limit is carried into the profile's meta */
    ck_assert_int_eq((int)cJSON_GetObjectItem(cJSON_GetObjectItem(p, "meta"), "maxMarkers")->valuedouble, 3);
    cJSON_Delete(p);
    check_follow(text, strlen(text), 50, 1);
    free(text);

    /* 0: no limit */
    ck_assert_int_gt(asprintf(&text, "{\"type\":\"meta\",\"maxMarkers\":0,%s%s", head + strlen("{\"type\":\"meta\","),
                              body), 0);
    spit(path, text, strlen(text));
    free(text);
    p = convert_file(path, &end, &st, NULL);
    ck_assert_uint_eq(st.left_out, 0);
    ck_assert_uint_eq(st.markers, 11);
    cJSON_Delete(p);
}
END_TEST

/* profile_conv_finalize writes the same file profile_finalize does, and can be called again. */
START_TEST(test_follow_finalize)
{
    char *text;
    ck_assert_int_gt(asprintf(&text, "%s%s", head,
                              "{\"type\":\"open\",\"kind\":\"test\",\"key\":\"t\",\"name\":\"test\",\"startTime\":1.0}\n"
                              "{\"type\":\"marker\",\"name\":\"a\",\"startTime\":2.0,\"endTime\":null,\"data\":null}\n"),
                     0);
    char *path = in_dir("s.jsonl");
    spit(path, text, strlen(text));
    int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    struct profile_conv *pc;
    ck_assert_int_eq(profile_conv_new(fd, &pc), 0);
    struct profile_end end = {.end_ms = 9.0, .open_status = "TIMEOUT"};
    struct profile_stats st;
    char *one = strdup(in_dir("one.json")), *two = strdup(in_dir("two.json"));
    ck_assert_int_eq(profile_finalize(fd, AT_FDCWD, one, &end, &st), 0);
    ck_assert_int_eq(profile_conv_finalize(pc, AT_FDCWD, two, &end, &st), 0);
    char *a = slurp(one, NULL), *b = slurp(two, NULL);
    ck_assert_str_eq(a, b);
    ck_assert_uint_eq(st.closed_open, 1);
    free(a);
    free(b);
    static const char more[] = "{\"type\":\"close\",\"kind\":\"test\",\"key\":\"t\"}\n";
    ck_assert_int_eq(write_all(fd, more, strlen(more)), 0);
    ck_assert_int_eq(profile_conv_finalize(pc, AT_FDCWD, two, &end, &st), 0);
    ck_assert_uint_eq(st.closed_open, 0);
    ck_assert_uint_eq(st.markers, 1);
    profile_conv_free(pc);

    /* Not a stream: the error sticks. */
    spit(path, "garbage\n", 8);
    int bad = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(profile_conv_new(bad, &pc), 0);
    ck_assert_int_eq(profile_conv_update(pc), -EINVAL);
    ck_assert_int_eq(profile_conv_finalize(pc, AT_FDCWD, two, &end, &st), -EINVAL);
    profile_conv_free(pc);
    profile_conv_free(NULL);
    close(bad);
    close(fd);
    free(text);
    free(one);
    free(two);
}
END_TEST

static int count_entries(const char *d)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", d);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (fscanf(f, "%d", &n) != 1)
        n = -1;
    pclose(f);
    return n;
}

START_TEST(test_finalize_twice_and_symlink)
{
    struct stream_meta m = {.product = "cmd", .interval_ms = 100, .start_wall_ms = 1.7e12, .t0_ns = 1000000000,
                            .logical_cpus = 2, .physical_cpus = 1, .main_memory = 1 << 30};
    struct stream *s;
    char *path = in_dir("profile.json");
    ck_assert_int_eq(stream_open(AT_FDCWD, path, &m, 0, &s), 0);
    marker_emit(stream_sink(s), "a", 1000000000, 1001000000, 0, "{\"type\":\"Text\"}", 15);
    ck_assert_int_eq(stream_sync(s), 0);
    struct profile_end end = {.end_ms = 5, .open_status = "TIMEOUT"};
    struct profile_stats st;
    ck_assert_int_eq(profile_finalize(stream_fd(s), AT_FDCWD, path, &end, &st), 0);
    ck_assert_uint_eq(st.markers, 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(profile_detect(fd), PROFILE_KIND_FULL);
    close(fd);
    /* The stream lives on after the rename: a kill step, then the second finalization. */
    marker_emit(stream_sink(s), "kill", 1002000000, MARKER_INSTANT, 2, "{\"type\":\"KillStep\"}", 19);
    end.end_ms = 6;
    ck_assert_int_eq(profile_finalize(stream_fd(s), AT_FDCWD, path, &end, &st), 0);
    ck_assert_uint_eq(st.markers, 2);
    stream_close(s);
    char *text = slurp(path, NULL);
    cJSON *p = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(p);
    check_structure(p);
    ck_assert_int_ge(find_marker(p, "kill|2.000|null|2|{\"type\":\"KillStep\"}"), 0);
    ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "meta"), "profilingEndTime")->valuedouble == 6.0);
    cJSON_Delete(p);
    ck_assert_int_eq(count_entries(dir), 1); /* no temporary file left */

    /* The target is a symlink: refused (outfile.h), never written through, the link left. */
    char *target = in_dir("target"), *link = in_dir("link");
    spit(target, "precious\n", 9);
    ck_assert_int_eq(symlink(target, link), 0);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(profile_finalize(fd, AT_FDCWD, link, &end, NULL), -EINVAL); /* a full profile is no stream */
    close(fd);
    ck_assert(access(in_dir("s2.jsonl"), F_OK) < 0);
    ck_assert_int_eq(stream_open(AT_FDCWD, in_dir("s2.jsonl"), &m, 0, &s), 0);
    ck_assert_int_eq(profile_finalize(stream_fd(s), AT_FDCWD, link, &end, NULL), -ELOOP);
    stream_close(s);
    text = slurp(target, NULL);
    ck_assert_str_eq(text, "precious\n");
    free(text);
    struct stat lst;
    ck_assert_int_eq(lstat(link, &lst), 0);
    ck_assert(S_ISLNK(lst.st_mode));
    /* Failure leaves nothing behind: the target is a directory. */
    ck_assert_int_eq(mkdir(in_dir("adir"), 0755), 0);
    ck_assert_int_eq(stream_open(AT_FDCWD, in_dir("s3.jsonl"), &m, 0, &s), 0);
    int before = count_entries(dir);
    ck_assert_int_lt(profile_finalize(stream_fd(s), AT_FDCWD, in_dir("adir"), &end, NULL), 0);
    ck_assert_int_eq(count_entries(dir), before);
    stream_close(s);
}
END_TEST

START_TEST(test_detect_and_recover)
{
    char stream[256]; /* in_dir's buffers are reused */
    snprintf(stream, sizeof stream, "%s", in_dir("run.json"));
    size_t len;
    char *killed = slurp(fixture("stream-killed.jsonl"), &len);
    /* What SIGKILL leaves: cut in the middle of a line. */
    spit(stream, killed, len - 17);
    int fd = open(stream, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(profile_detect(fd), PROFILE_KIND_STREAM);
    close(fd);

    /* To a separate output: the input is untouched. */
    char out[256];
    snprintf(out, sizeof out, "%s", in_dir("recovered.json"));
    struct profile_stats st;
    ck_assert_int_eq(profile_recover(stream, out, false, &st), 0);
    ck_assert_uint_eq(st.skipped_lines, 1);
    /* Compressed: the same profile once decompressed. */
    ck_assert_int_eq(profile_recover(stream, in_dir("recovered.json.gz"), true, &st), 0);
    size_t plain_len, gz_len;
    char *plain = slurp(out, &plain_len), *unz = gunzip(in_dir("recovered.json.gz"), &gz_len);
    ck_assert(plain_len == gz_len && memcmp(plain, unz, gz_len) == 0);
    ck_assert_uint_lt(st.bytes, plain_len / 3);
    free(plain);
    free(unz);
    size_t len2;
    char *again = slurp(stream, &len2);
    ck_assert_uint_eq(len2, len - 17);
    ck_assert(memcmp(again, killed, len2) == 0);
    free(again);
    char *text = slurp(out, NULL);
    cJSON *p = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(p);
    check_structure(p);
    cJSON_Delete(p);

    /* In place; then it is a full profile, left alone. */
    ck_assert_int_eq(profile_recover(stream, NULL, false, &st), 0);
    fd = open(stream, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(profile_detect(fd), PROFILE_KIND_FULL);
    close(fd);
    char *before = slurp(stream, &len);
    ck_assert_int_eq(profile_recover(stream, NULL, false, &st), PROFILE_RECOVER_ALREADY_FULL);
    /* A full profile asked to go elsewhere is copied there, as it is or compressed. */
    ck_assert_int_eq(profile_recover(fixture("final-profile.json"), in_dir("x"), false, &st), PROFILE_RECOVER_ALREADY_FULL);
    size_t flen, xlen;
    char *full = slurp(fixture("final-profile.json"), &flen), *x = slurp(in_dir("x"), &xlen);
    ck_assert(flen == xlen && memcmp(full, x, flen) == 0);
    free(x);
    ck_assert_int_eq(profile_recover(fixture("final-profile.json"), in_dir("x.gz"), true, &st), PROFILE_RECOVER_ALREADY_FULL);
    x = gunzip(in_dir("x.gz"), &xlen);
    ck_assert(flen == xlen && memcmp(full, x, flen) == 0);
    free(x);
    free(full);
    fd = open(in_dir("x.gz"), O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(profile_detect(fd), PROFILE_KIND_FULL);
    close(fd);
    char *after = slurp(stream, &len2);
    ck_assert(len == len2 && memcmp(before, after, len) == 0);
    free(before);
    free(after);

    /* Neither. */
    char *other = in_dir("other");
    spit(other, "hello\n", 6);
    ck_assert_int_eq(profile_recover(other, NULL, false, &st), -EINVAL);
    ck_assert_int_eq(profile_recover(in_dir("missing"), NULL, false, &st), -ENOENT);
    char *fifo = in_dir("fifo");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(profile_recover(fifo, NULL, false, &st), -EINVAL);
    fd = open(other, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(profile_detect(fd), PROFILE_KIND_OTHER);
    close(fd);
    free(killed);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fixture_complete_matches_final);
    tcase_add_test(tc, test_fixture_midrun_and_killed);
    tcase_add_test(tc, test_torn_and_garbage);
    tcase_add_test(tc, test_late_messages);
    tcase_add_test(tc, test_not_a_stream);
    tcase_add_test(tc, test_dumped_processes);
    tcase_add_test(tc, test_open_state_closed);
    tcase_add_test(tc, test_phase_cpu_percent);
    tcase_add_test(tc, test_counters_and_costs);
    tcase_add_test(tc, test_long_line_skipped);
    tcase_add_test(tc, test_large_payloads);
    tcase_add_test(tc, test_finalize_twice_and_symlink);
    tcase_add_test(tc, test_detect_and_recover);
    tcase_add_test(tc, test_follow_fixtures);
    tcase_add_test(tc, test_follow_state_and_long_lines);
    tcase_add_test(tc, test_fed_writer_layout);
    tcase_add_test(tc, test_follow_finalize);
    tcase_add_test(tc, test_marker_limit);
    suite_add_tcase(s, tc);
    return check_run(s);
}

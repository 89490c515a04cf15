/* TeamCity service messages (testlog/formats.h has the result mapping):
 *
 *   ##teamcity[testSuiteStarted name='s' flowId='f']    → TLE_SUITE_START id = s
 *   ##teamcity[testSuiteFinished name='s']              → TLE_SUITE_END
 *   ##teamcity[testStarted name='t' flowId='f']         → TLE_TEST_START id = t
 *   ##teamcity[testFailed name='t' message='m' details='d']  the test failed: m, then d, on
 *                                                        lines of their own (several testFailed
 *                                                        of one test add up)
 *   ##teamcity[testIgnored name='t' message='m']        the test is skipped (reason m)
 *   ##teamcity[testFinished name='t' duration='12']     → TLE_TEST_END: FAIL when it failed, SKIP
 *                                                        when ignored, else PASS; duration in ms
 *   ##teamcity[testFailed name='t' ...] of a test that never started in its flow: a failure
 *     outside any test (mocha-teamcity-reporter's failed hook, '"before all" hook for "x"', which
 *     has neither testStarted nor testFinished): TLE_TEST_END FAIL at once, as mocha's own report
 *     lists it among its failures
 *
 * A test is named by its name, scoped by the suites open in its flow (their names joined with '/';
 * the core then calls it "Suite/Inner/name"): mocha's and jest's reporters name a test by its own
 * title alone, and two describe blocks may each hold a test of one name. Catch2's one suite is the
 * test binary.
 *
 * Attribute values are escaped with '|': |' |n |r || |[ |] and |0xNNNN (a UTF-16 code unit,
 * written as UTF-8; surrogates become U+FFFD). A message may also be the single-value form
 * "##teamcity[name 'value']", which names no test and is left alone. flowId keeps apart the
 * messages of tests that run at the same time (parallel runs interleave them), and each flow has
 * its own suites: a test that started is known by (flowId, name) until its testFinished, with its
 * failure or skip. The core knows a running test by its full name, and takes a second start of a
 * name for the end of the first (which never finished): a test that starts while another flow's
 * test of the same full name runs (two shards of one suite) is not opened, and its result comes
 * as a test without a start, timed by the reporter's duration. A message begins its line (after
 * the CI prefixes the core strips).
 */
#include "testlog/formats.h"

#include "testlog/testlog.h"

#define TC_PENDING 64 /* tests started, failed or ignored, their testFinished still to come */
#define TC_NAME 512
#define TC_FLOW 64
#define TC_FLOWS 16 /* flows with suites open at once; a seventeenth takes the oldest's place */
#define TC_DEPTH 32 /* suites nested deeper still count, and add nothing to the scope */

struct tc_pending {
    bool used, skipped, failed; /* failed: a testFailed came (its text may be empty) */
    bool opened;                /* its testStarted went to the core as a TLE_TEST_START */
    size_t name_n, flow_n, msg_n, scope_n;
    char name[TC_NAME], flow[TC_FLOW], msg[TESTLOG_MESSAGE_MAX];
    char scope[TC_NAME]; /* its flow's suites when it started */
};

/* A flow's open suites: their names joined with '/', and where each level's name begins. */
struct tc_flow {
    bool used;
    unsigned depth;
    size_t flow_n, scope_n;
    size_t at[TC_DEPTH]; /* scope_n before level d's name was added */
    char flow[TC_FLOW], scope[TC_NAME];
};

struct tc_state {
    struct tc_pending pend[TC_PENDING];
    struct tc_flow flows[TC_FLOWS];
    unsigned next, next_flow; /* which slot a full table gives up */
    size_t name_n, msg_n;
    char name[TC_NAME], msg[TESTLOG_MESSAGE_MAX]; /* the current line's, unescaped */
};

/* Unescape s into dst (capacity cap, cut at a character's start); returns the length. */
static size_t unescape(char *dst, size_t cap, struct tl_str s)
{
    size_t o = 0;
    for (size_t i = 0; i < s.n; i++) {
        char tmp[4];
        size_t k = 1;
        tmp[0] = s.p[i];
        if (s.p[i] == '|' && i + 1 < s.n) {
            char c = s.p[++i];
            tmp[0] = c == 'n' ? '\n' : c == 'r' ? '\r' : c;
            if (c == '0' && i + 5 < s.n && s.p[i + 1] == 'x') {
                unsigned v = 0;
                bool hex = true;
                for (size_t h = i + 2; h < i + 6 && hex; h++) {
                    char x = s.p[h];
                    hex = (x >= '0' && x <= '9') || (x >= 'a' && x <= 'f') || (x >= 'A' && x <= 'F');
                    v = v * 16 + (unsigned)(x <= '9' ? x - '0' : (x | 0x20) - 'a' + 10);
                }
                if (hex) {
                    i += 5;
                    if (v >= 0xd800 && v < 0xe000)
                        v = 0xfffd;
                    if (v < 0x80)
                        tmp[0] = (char)v, k = 1;
                    else if (v < 0x800)
                        tmp[0] = (char)(0xc0 | (v >> 6)), tmp[1] = (char)(0x80 | (v & 0x3f)), k = 2;
                    else
                        tmp[0] = (char)(0xe0 | (v >> 12)), tmp[1] = (char)(0x80 | ((v >> 6) & 0x3f)),
                        tmp[2] = (char)(0x80 | (v & 0x3f)), k = 3;
                }
            }
        }
        if (o + k > cap)
            break;
        memcpy(dst + o, tmp, k);
        o += k;
    }
    /* cut before a UTF-8 character left incomplete */
    size_t c = o;
    while (c > 0 && o == cap && ((unsigned char)dst[c - 1] & 0xc0) == 0x80)
        c--;
    if (o == cap && c > 0 && ((unsigned char)dst[c - 1] & 0x80))
        o = c - 1;
    return o;
}

/* The raw (still escaped) value of attribute key in the body, or false. */
static bool attr(struct tl_str body, const char *key, struct tl_str *ret)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl + 2 <= body.n; i++) {
        if (body.p[i] == '\'') { /* skip a value */
            for (i++; i < body.n && body.p[i] != '\''; i++)
                if (body.p[i] == '|')
                    i++;
            continue;
        }
        if ((i == 0 || body.p[i - 1] == ' ') && !memcmp(body.p + i, key, kl) && body.p[i + kl] == '=' &&
            body.p[i + kl + 1] == '\'') {
            size_t b = i + kl + 2, e = b;
            while (e < body.n && body.p[e] != '\'') {
                if (body.p[e] == '|')
                    e++;
                e++;
            }
            if (e >= body.n)
                return false;
            *ret = tl_str_make(body.p + b, e - b);
            return true;
        }
    }
    return false;
}

/* The flow's suites (NULL: none open, and create is false). */
static struct tc_flow *flow_get(struct tc_state *st, struct tl_str flow, bool create)
{
    struct tc_flow *free_slot = NULL;
    for (size_t i = 0; i < TC_FLOWS; i++) {
        struct tc_flow *f = &st->flows[i];
        if (f->used && f->flow_n == flow.n && !memcmp(f->flow, flow.p, flow.n))
            return f;
        if (!free_slot && (!f->used || !f->depth))
            free_slot = f;
    }
    if (!create)
        return NULL;
    struct tc_flow *f = free_slot ? free_slot : &st->flows[st->next_flow++ % TC_FLOWS];
    f->used = true;
    f->depth = 0;
    f->scope_n = 0;
    f->flow_n = tl_copy(f->flow, sizeof f->flow, flow).n;
    return f;
}

/* The flow's scope: its open suites' names joined with '/' ("" when none). */
static struct tl_str flow_scope(struct tc_state *st, struct tl_str flow)
{
    const struct tc_flow *f = flow_get(st, flow, false);
    return f ? tl_str_make(f->scope, f->scope_n) : tl_str_make(NULL, 0);
}

static void suite_start(struct tc_state *st, struct tl_str flow, struct tl_str name)
{
    struct tc_flow *f = flow_get(st, flow, true);
    if (f->depth < TC_DEPTH) {
        f->at[f->depth] = f->scope_n;
        size_t sep = f->scope_n ? 1 : 0;
        if (f->scope_n + sep + name.n <= sizeof f->scope) { /* else the level adds nothing */
            if (sep)
                f->scope[f->scope_n++] = '/';
            memcpy(f->scope + f->scope_n, name.p, name.n);
            f->scope_n += name.n;
        }
    }
    f->depth++;
}

/* The end of the innermost suite of that name (and of any left open inside it); a name that
 * is not open ends nothing (one that did not fit in the scope stays counted until its parent
 * ends: it adds nothing meanwhile). */
static void suite_end(struct tc_state *st, struct tl_str flow, struct tl_str name)
{
    struct tc_flow *f = flow_get(st, flow, false);
    if (!f || !f->depth)
        return;
    if (f->depth > TC_DEPTH) {
        f->depth--;
        return;
    }
    for (unsigned d = f->depth; d-- > 0;) {
        size_t b = f->at[d] + (f->at[d] ? 1 : 0), e = d + 1 < f->depth ? f->at[d + 1] : f->scope_n;
        if (e >= b && e - b == name.n && !memcmp(f->scope + b, name.p, name.n)) {
            f->depth = d;
            f->scope_n = f->at[d];
            return;
        }
    }
}

static struct tc_pending *find(struct tc_state *st, struct tl_str flow, struct tl_str name)
{
    for (size_t i = 0; i < TC_PENDING; i++) {
        struct tc_pending *p = &st->pend[i];
        if (p->used && p->name_n == name.n && !memcmp(p->name, name.p, name.n) &&
            p->flow_n == flow.n && !memcmp(p->flow, flow.p, flow.n))
            return p;
    }
    return NULL;
}

static struct tc_pending *add(struct tc_state *st, struct tl_str flow, struct tl_str name)
{
    struct tc_pending *p = find(st, flow, name);
    if (p)
        return p;
    for (size_t i = 0; i < TC_PENDING && !p; i++)
        if (!st->pend[i].used)
            p = &st->pend[i];
    if (!p)
        p = &st->pend[st->next++ % TC_PENDING]; /* a test whose end never came */
    p->used = true;
    p->skipped = p->failed = p->opened = false;
    p->msg_n = 0;
    p->name_n = tl_copy(p->name, sizeof p->name, name).n;
    p->flow_n = tl_copy(p->flow, sizeof p->flow, flow).n;
    struct tl_str scope = flow_scope(st, flow);
    p->scope_n = tl_copy(p->scope, sizeof p->scope, scope).n;
    return p;
}

static int tc_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                    struct tl_event *ev)
{
    (void)arrival_ns;
    struct tc_state *st = state;
    if (!TL_PREFIX(line, len, "##teamcity["))
        return 0;
    const char *m = line;
    const char *end = line + len;
    while (end > m && end[-1] == ' ')
        end--;
    if (end[-1] != ']')
        return 0;
    struct tl_str body = tl_str_make(m + 11, (size_t)(end - 1 - m - 11));
    size_t w = 0;
    while (w < body.n && body.p[w] != ' ')
        w++;
    /* without a flowId the flow is "" (a NULL pointer may not be given to memcmp/memcpy) */
    struct tl_str kind = tl_str_make(body.p, w), rawname, flow = TL_LIT(""), v;
    if (!attr(body, "name", &rawname))
        return 0;
    attr(body, "flowId", &flow);
    st->name_n = unescape(st->name, sizeof st->name, rawname);
    struct tl_str name = tl_str_make(st->name, st->name_n);
    if (!name.n)
        return 0;
    if (tl_str_eq(kind, "testStarted")) {
        struct tc_pending *p = add(st, flow, name);
        for (size_t i = 0; i < TC_PENDING; i++) {
            const struct tc_pending *o = &st->pend[i];
            if (o != p && o->used && o->opened && o->name_n == name.n && !memcmp(o->name, name.p, name.n) &&
                o->scope_n == p->scope_n && !memcmp(o->scope, p->scope, p->scope_n))
                return 0; /* another flow's test of that full name runs (see the top) */
        }
        p->opened = true;
        tl_event_init(ev, TLE_TEST_START);
        ev->id = name;
        ev->scope = tl_str_make(p->scope, p->scope_n);
        return 1;
    }
    if (tl_str_eq(kind, "testSuiteStarted") || tl_str_eq(kind, "testSuiteFinished")) {
        bool start = kind.p[9] == 'S';
        tl_event_init(ev, start ? TLE_SUITE_START : TLE_SUITE_END);
        ev->id = name;
        if (start)
            suite_start(st, flow, name);
        else
            suite_end(st, flow, name);
        return 1;
    }
    if (tl_str_eq(kind, "testFailed") || tl_str_eq(kind, "testIgnored")) {
        bool failed = kind.p[4] == 'F', started = find(st, flow, name) != NULL;
        struct tc_pending *p = add(st, flow, name);
        p->skipped = !failed && !p->failed;
        p->failed |= failed;
        for (int k = 0; k < 2; k++)
            if (attr(body, k ? "details" : "message", &v) && v.n) {
                st->msg_n = unescape(st->msg, sizeof st->msg, v);
                tl_append_line(p->msg, sizeof p->msg, &p->msg_n, tl_trim(tl_str_make(st->msg, st->msg_n)));
            }
        if (!failed || started)
            return 0; /* the result comes with testFinished */
        p->used = false; /* a failure outside any test: no testFinished follows */
        tl_set_result(ev, name, tl_str_make(p->scope, p->scope_n), TL_FAILED);
        ev->message = tl_str_make(p->msg, p->msg_n);
        return 1;
    }
    if (!tl_str_eq(kind, "testFinished"))
        return 0;
    struct tc_pending *p = find(st, flow, name);
    tl_set_result(ev, name, p ? tl_str_make(p->scope, p->scope_n) : flow_scope(st, flow),
                  !p || (!p->skipped && !p->failed) ? TL_PASSED : p->skipped ? TL_SKIPPED : TL_FAILED);
    double ms;
    if (attr(body, "duration", &v) && tl_parse_number(v, &ms) && ms >= 0)
        ev->t.duration_ms = ms;
    if (p) {
        p->used = false;
        if (p->msg_n) {
            /* the slot's text stays valid until the next call */
            ev->message = tl_str_make(p->msg, p->msg_n);
        }
    }
    return 1;
}

const struct tl_format tl_format_teamcity = {
    .name = "teamcity",
    .bit = TL_FMT_TEAMCITY,
    .state_size = sizeof(struct tc_state),
    .parse = tc_parse,
    .release = NULL,
    .pairs = (const char *const[]){"##", NULL},
};

/* testlog_impl.h — what the test-log core's parts share; not for other modules (they include
 * testlog.h). The core is one object in three files:
 *   testlog.c         the formats' table, the lifecycle, and the line path: CI prefixes and
 *                     escapes stripped, the prefilter, dispatch to the parsers in priority
 *                     order, unfinished lines' tails; and the queries of testlog.h;
 *   testlog_tests.c   a test's life: open tests by id, per-test cost, the Test and TestResult
 *                     markers and state lines, payloads spelled out as text;
 *   testlog_events.c  every other event (statuses, subtests, log lines, crashes, suites,
 *                     processes) and handle(), which routes a parser's events.
 * They share struct testlog below. */
#ifndef RESMON_TESTLOG_IMPL_H
#define RESMON_TESTLOG_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/jsonw.h"
#include "base/markers.h"
#include "testlog/event.h"
#include "testlog/formats.h"
#include "testlog/testlog.h"

/* A set of parsers, by slot index: the prefilter's masks. */
typedef uint32_t fmt_mask;

#define TL_MAX_NEST 64     /* open suites and groups */
#define TL_MAX_PROCS 256   /* open mozlog processes */
#define TL_ID_MAX TESTLOG_ID_MAX

struct sbuf {
    char *p;
    size_t n, cap;
};

struct open_test {
    struct sbuf id, scope;
    uint64_t start_ns, cpu_start, max_rss;
    bool have_cpu;
    int64_t timeoutfactor;
    uint64_t open_line; /* the sink's handle of its open line (markers.h); 0: cannot be taken back */
    uint8_t tail;       /* the stream (1, 2) whose unfinished line's tail opened it; 0: none */
    bool tail_seen;     /* its tail, read again, starts it again */
};

struct open_span { /* a suite, group or process */
    struct sbuf key, text;
    uint64_t start_ns;
    bool group;
};

/* A growable text buffer, NUL-terminated when handed out (ob_end). */
struct obuf {
    char *p;
    size_t n, cap;
    bool failed;
};

struct fmt_slot {
    const struct tl_format *f;
    void *state;
};

struct testlog {
    struct testlog_config cfg;
    struct marker_sink sink;
    struct testlog_probe probe;
    bool finishing; /* testlog_finish closes what is open */
    struct fmt_slot fmts[TL_FMT_COUNT];
    size_t nfmts;
    void *states; /* the parsers' states (fmts[].state), one anonymous mapping (testlog_new) */
    size_t states_size;
    /* Prefilter (bits are slot indexes): the parsers that may take, while idle, a line starting
     * with bytes a, b (by_first[a] | pair_rows[pair_row[a]][b]: a first byte some parser takes
     * whatever follows, or a pair named by a parser; row 0 is all zeros) or a line of the one
     * byte a (by_byte[a]); those that also take a line whose first word holds a '.'; those that
     * may ever be busy; those busy now. Rows exist only for the first bytes of named pairs (a
     * few dozen), not a 128 KiB table filled at every start. */
    fmt_mask by_first[256];
    uint8_t pair_row[256];
    fmt_mask (*pair_rows)[256];
    size_t npair_rows;
    fmt_mask by_byte[256];
    fmt_mask dotted, can_busy, busy;
    fmt_mask can_capture, capturing; /* parsers that may capture lines (tl_format.captures); those
                                        that do now: the first of them gets every line alone */

    char *strip;
    size_t strip_cap;
    struct jsonw w;   /* payloads of the rarer markers */
    struct obuf ob;   /* payloads and state lines of tests, written as text */
    struct jsonw esc; /* strings that need escaping, on their way into ob */

    struct open_test *open; /* ordered by start: the most recent is last */
    size_t nopen, open_cap;
    uint64_t open_bytes; /* what the open tests hold (TESTLOG_OPEN_BYTES_MAX) */
    /* A parser's state while it reads an unfinished line's tail (testlog_line_tail): its own is
     * left as it was. */
    void *tail_state;
    struct open_span nest[TL_MAX_NEST];
    size_t nnest;
    struct open_span *procs;
    size_t nprocs;

    /* TLE_ANCHOR instants (a ring, newest at anchor_head - 1): what the tree had spent then */
    struct anchor {
        uint64_t ns, cpu, max_rss;
        bool have_cpu;
    } anchors[TL_ANCHORS];
    unsigned anchor_head, nanchors;

    struct testlog_stats stats;
    /* The last test that ended, when no start line announced it (TAP, pytest without -v print a
     * test only with its result): what a hang in the next one is known by ("after N, name"). */
    bool last_unannounced;
    char last_name[256];
    struct testlog_result slowest[TESTLOG_SLOWEST_MAX];
    size_t nslowest;
    struct testlog_result *unexp;
    size_t nunexp;
};


/* ---- small helpers ---- */

static inline bool str_eq(struct tl_str s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static inline bool str_same(struct tl_str a, struct tl_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static inline int sbuf_set(struct sbuf *b, const char *p, size_t n)
{
    if (n > TL_ID_MAX)
        n = utf8_valid_prefix(p, TL_ID_MAX);
    if (n + 1 > b->cap) {
        size_t cap = n + 1 < 64 ? 64 : n + 1;
        char *q = realloc(b->p, cap);
        if (!q)
            return -ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p, p, n);
    b->p[n] = '\0';
    b->n = n;
    return 0;
}

static inline struct tl_str sbuf_str(const struct sbuf *b) { return tl_str_make(b->p ? b->p : "", b->n); }

static inline char *strndup_or_null(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

static inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* ---- payload text (testlog_tests.c) ---- */

bool ob_grow(struct obuf *b, size_t more);
static inline void ob_put(struct obuf *b, const char *s, size_t n)
{
    if (b->cap - b->n <= n && !ob_grow(b, n))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

#define PUT(b, lit) ob_put((b), (lit), sizeof(lit) - 1)

/* ,"key": of field f of a type's table: payloads spelled out as text still take their keys from
 * the schema (markers.h). */
static inline void put_field(struct obuf *b, const struct marker_field *f)
{
    PUT(b, ",\"");
    ob_put(b, f->key, f->key_len);
    PUT(b, "\":");
}

static inline void ob_reset(struct obuf *b)
{
    b->n = 0;
    b->failed = false;
}

/* Terminate; false when the text is incomplete (out of memory). */
static inline bool ob_end(struct obuf *b)
{
    if (b->cap - b->n < 1 && !ob_grow(b, 0))
        return false;
    b->p[b->n] = '\0';
    return !b->failed;
}

/* A JSON string value (escaped as needed). */
void put_str(struct testlog *tl, const char *p, size_t n);
void put_cstr(struct testlog *tl, const char *s);
/* A message as field f, and, when it has several lines, line by line as field lines. */
void put_message(struct testlog *tl, const struct marker_field *f, const struct marker_field *lines,
                 struct tl_str m);

/* ---- tests (testlog_tests.c) ---- */

/* When ev happened, on the monotonic clock (its own time when credible, else its line's). */
uint64_t event_time(const struct testlog *tl, const struct tl_event *ev, uint64_t line_arrival);
bool is_unexpected(const struct tl_event *ev);
const char *color_for(struct tl_str status, bool unexpected);
/* State lines: an open span of kind (its text) and its close. */
void state_close(struct testlog *tl, const char *kind, struct tl_str scope, struct tl_str id);
void state_open_text(struct testlog *tl, const char *kind, struct tl_str name, uint64_t start);
/* Note what the tree had spent at ns: a test without an opener may have started then. */
void note_anchor(struct testlog *tl, uint64_t ns);
/* What an open test of these lengths holds (TESTLOG_OPEN_BYTES_MAX). */
uint64_t open_cost(size_t id_n, size_t scope_n);
ssize_t find_open(const struct testlog *tl, struct tl_str id, struct tl_str scope, bool any_scope);
void test_start(struct testlog *tl, const struct tl_event *ev, uint64_t t);
void test_resume(struct testlog *tl, const struct tl_event *ev, uint64_t t);
void test_end(struct testlog *tl, const struct tl_event *ev, uint64_t t);
void test_message(struct testlog *tl, const struct tl_event *ev);
/* End open test i with status (and message) at end. */
void close_with_status(struct testlog *tl, size_t i, const char *status, const char *message,
                       uint64_t end);
/* Take back the tests an unfinished line's tail on stream opened and no longer starts. */
void untail(struct testlog *tl, int stream);

/* ---- other events (testlog_events.c) ---- */

/* Route one event of a parser (its line arrived at arrival). */
void handle(struct testlog *tl, const struct tl_event *ev, uint64_t arrival);
/* The marker of open suite or group i, and of open process i, ending at end. */
void nest_emit(struct testlog *tl, size_t i, uint64_t end);
void process_emit(struct testlog *tl, size_t i, const struct tl_event *ev, uint64_t end);

/* ---- lifecycle (testlog.c) ---- */

void result_release(struct testlog_result *r);

#endif

/* testlog.c — see testlog.h. The per-format parsers live in testlog/formats/<format>.c and speak
 * testlog/event.h; this file strips lines for matching and dispatches them; testlog_tests.c pairs
 * test starts with ends and writes their markers, testlog_events.c the other events' (the parts:
 * testlog_impl.h).
 *
 * Hot path: each format declares which first bytes and byte pairs its lines can start with (and
 * whether a '.' in the first word may make a line its own, and when it is busy waiting for a
 * continuation that any line may bring); a table indexed by a line's first two bytes then names
 * the parsers to call, so a line no parser can take costs a table look-up and no call. That
 * decision is made before the line is stripped (surely_untaken): CI prefixes are read in the
 * line's first 64 bytes when those hold no escape, and anything undecided there takes the exact
 * path (strip, then look up). no_prefilter in the config turns all of this off, which the unit
 * and fuzz tests use as the reference. Nothing is allocated per line. A test costs one slot in
 * the open-test table (whose string buffers are reused) and one payload spelled out as text in a
 * reused buffer (testlog_tests.c, "payload text").
 */
#include "testlog/testlog.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/jsonw.h"
#include "base/util.h"
#include "testlog/event.h"
#include "testlog/formats.h"
#include "testlog/testlog_impl.h"

/* The formats in priority order (test-logs.md). A format whose parser is not part of this build
 * is simply not listed: --parse still accepts its name, and its bit selects nothing. */
static const struct tl_format *const format_table[] = {
#define TL_FORMAT(var, NAME, alias) &tl_format_##var,
#include "testlog/registry.h"
#undef TL_FORMAT
};

_Static_assert(ARRAY_SIZE(format_table) <= 32, "prefilter masks are 32 bits");
_Static_assert(ARRAY_SIZE(format_table) == TL_FMT_COUNT, "one parser a format");

/* The names --parse accepts: each format's own (tl_format.name) and its alias (an alias of NULL
 * leaves a second entry that never matches). */
static const struct name_bit format_names[] = {
#define TL_FORMAT(var, NAME, alias) {#var, TL_FMT_##NAME}, {alias ? alias : "", TL_FMT_##NAME},
#include "testlog/registry.h"
#undef TL_FORMAT
};

static const char *const status_names[TL_STATUS_COUNT] = {
    [TL_STATUS_PASS] = "PASS",
    [TL_STATUS_FAIL] = "FAIL",
    [TL_STATUS_OK] = "OK",
    [TL_STATUS_ERROR] = "ERROR",
    [TL_STATUS_TIMEOUT] = "TIMEOUT",
    [TL_STATUS_CRASH] = "CRASH",
    [TL_STATUS_ASSERT] = "ASSERT",
    [TL_STATUS_PRECONDITION_FAILED] = "PRECONDITION_FAILED",
    [TL_STATUS_SKIP] = "SKIP",
    [TL_STATUS_NOTRUN] = "NOTRUN",
    [TL_STATUS_INCOMPLETE] = "INCOMPLETE",
    [TL_STATUS_OTHER] = "OTHER",
};


int testlog_status_index(const char *status, size_t len)
{
    for (int i = 0; i < TL_STATUS_OTHER; i++)
        if (strlen(status_names[i]) == len && memcmp(status_names[i], status, len) == 0)
            return i;
    return TL_STATUS_OTHER;
}

const char *testlog_status_name(int i)
{
    return i >= 0 && i < TL_STATUS_COUNT ? status_names[i] : NULL;
}

unsigned testlog_available_formats(void)
{
    unsigned m = 0;
    for (size_t i = 0; i < ARRAY_SIZE(format_table); i++)
        if (format_table[i])
            m |= format_table[i]->bit;
    return m;
}

int testlog_parse_formats(const char *arg, unsigned *ret_mask)
{
    if (!arg)
        return -EINVAL;
    if (strcmp(arg, "auto") == 0 || strcmp(arg, "all") == 0) {
        *ret_mask = TL_FMT_ALL;
        return 0;
    }
    if (strcmp(arg, "none") == 0) {
        *ret_mask = 0;
        return 0;
    }
    return parse_name_list(arg, format_names, ARRAY_SIZE(format_names), ret_mask);
}

/* ---- lifecycle ---- */

/* A parser's state in the shared mapping starts at a multiple of this. */
#define STATE_ALIGN(n) (((n) + 63) & ~(size_t)63)

/* The prefilter's rows for pairs, one per first byte that begins a pair of an enabled format, and
 * row 0, zeroed, where every other byte points: counted first, so that they are allocated once. */
static int make_pair_rows(struct testlog *tl, unsigned formats, bool no_prefilter)
{
    size_t n = 1;
    for (size_t i = 0; i < ARRAY_SIZE(format_table) && !no_prefilter; i++) {
        const struct tl_format *f = format_table[i];
        if (!f || !(formats & f->bit) || (!f->first_bytes && !f->pairs))
            continue;
        for (const char *const *pr = f->pairs; pr && *pr; pr++) {
            unsigned a = (unsigned char)(*pr)[0];
            if (!tl->pair_row[a]) { /* (tl is zeroed: no row yet) */
                if (n > UINT8_MAX)
                    return -ENOMEM; /* more rows than there are first bytes in use */
                tl->pair_row[a] = (uint8_t)n++;
            }
        }
    }
    tl->pair_rows = calloc(n, sizeof *tl->pair_rows);
    if (!tl->pair_rows)
        return -ENOMEM;
    tl->npair_rows = n;
    return 0;
}

int testlog_new(const struct testlog_config *cfg, const struct marker_sink *sink,
                const struct testlog_probe *probe, struct testlog **ret)
{
    struct testlog *tl = calloc(1, sizeof *tl);
    if (!tl)
        return -ENOMEM;
    tl->cfg = *cfg;
    if (sink)
        tl->sink = *sink;
    if (probe)
        tl->probe = *probe;
    jsonw_init(&tl->w);
    jsonw_init(&tl->esc);
    if (make_pair_rows(tl, cfg->formats, cfg->no_prefilter) < 0) {
        testlog_free(tl);
        return -ENOMEM;
    }
    /* The parsers' states, zeroed, all in one anonymous mapping: the kernel zeroes a page when it
     * is first touched. Some states hold buffers of 100 KiB (a test's name, its captured output)
     * that calloc would clear at every start, a page fault every 4 KiB before the command runs,
     * whatever it prints. */
    for (size_t i = 0; i < ARRAY_SIZE(format_table); i++)
        if (format_table[i] && (cfg->formats & format_table[i]->bit))
            tl->states_size += STATE_ALIGN(format_table[i]->state_size);
    if (tl->states_size) {
        tl->states = mmap(NULL, tl->states_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (tl->states == MAP_FAILED) {
            tl->states = NULL;
            testlog_free(tl);
            return -ENOMEM;
        }
    }
    size_t tail_size = 1, at = 0;
    for (size_t i = 0; i < ARRAY_SIZE(format_table); i++) {
        const struct tl_format *f = format_table[i];
        if (!f || !(cfg->formats & f->bit))
            continue;
        size_t slot = tl->nfmts++;
        struct fmt_slot *s = &tl->fmts[slot];
        s->f = f;
        if (f->state_size > tail_size)
            tail_size = f->state_size;
        if (f->state_size) {
            s->state = (char *)tl->states + at;
            at += STATE_ALIGN(f->state_size);
        }
        fmt_mask bit = (fmt_mask)(1u << slot);
        bool any = (!f->first_bytes && !f->pairs) || cfg->no_prefilter;
        for (unsigned a = 0; a < 256; a++) {
            if (any || (a && f->first_bytes && strchr(f->first_bytes, (int)a))) {
                tl->by_byte[a] |= bit;
                tl->by_first[a] |= bit;
            }
        }
        for (const char *const *pr = f->pairs; pr && *pr && !any; pr++) {
            unsigned a = (unsigned char)(*pr)[0], b = (unsigned char)(*pr)[1];
            tl->by_byte[a] |= bit;
            tl->pair_rows[tl->pair_row[a]][b] |= bit;
        }
        if (f->dotted_word)
            tl->dotted |= bit;
        if (f->busy)
            tl->can_busy |= bit; /* and idle: its state is zeroed (testlog/event.h) */
        if (f->captures)
            tl->can_capture |= bit;
    }
    if (!(tl->tail_state = malloc(tail_size))) {
        testlog_free(tl);
        return -ENOMEM;
    }
    *ret = tl;
    return 0;
}

static void span_release(struct open_span *s)
{
    free(s->key.p);
    free(s->text.p);
}

void testlog_free(struct testlog *tl)
{
    if (!tl)
        return;
    for (size_t i = 0; i < tl->nfmts; i++)
        if (tl->fmts[i].state && tl->fmts[i].f->release)
            tl->fmts[i].f->release(tl->fmts[i].state);
    for (size_t i = 0; i < tl->open_cap; i++) {
        free(tl->open[i].id.p);
        free(tl->open[i].scope.p);
    }
    free(tl->open);
    if (tl->states)
        munmap(tl->states, tl->states_size);
    free(tl->tail_state);
    for (size_t i = 0; i < TL_MAX_NEST; i++)
        span_release(&tl->nest[i]);
    if (tl->procs)
        for (size_t i = 0; i < TL_MAX_PROCS; i++)
            span_release(&tl->procs[i]);
    free(tl->procs);
    free(tl->strip);
    free(tl->pair_rows);
    jsonw_release(&tl->w);
    jsonw_release(&tl->esc);
    buf_release(&tl->ob);
    free(tl);
}


/* ---- stripping (for matching only) ---- */

static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

/* Length of a CI prefix at the start of s, 0 if none. */
static size_t ci_prefix(const char *s, size_t n)
{
    /* Taskcluster: "[task 2026-01-01T00:00:00.000Z] " */
    if (n > 8 && memcmp(s, "[task ", 6) == 0) {
        size_t lim = n < 64 ? n : 64;
        for (size_t i = 6; i + 1 < lim; i++)
            if (s[i] == ']')
                return (s[i - 1] == 'Z' && s[i + 1] == ' ') ? i + 2 : 0;
        return 0;
    }
    /* mozharness: "HH:MM:SS     INFO - " (any level word) */
    if (n > 12 && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':' && is_digit(s[3]) &&
        is_digit(s[4]) && s[5] == ':' && is_digit(s[6]) && is_digit(s[7]) && s[8] == ' ') {
        size_t i = 8;
        while (i < n && s[i] == ' ')
            i++;
        size_t w = i;
        while (i < n && is_upper(s[i]))
            i++;
        if (i > w && i + 3 <= n && memcmp(s + i, " - ", 3) == 0)
            return i + 3;
        if (i > w && i + 2 == n && memcmp(s + i, " -", 2) == 0)
            return n;
        return 0;
    }
    /* mochitest: "<n> INFO " */
    if (n > 6 && is_digit(s[0])) {
        size_t i = 0;
        while (i < n && i < 20 && is_digit(s[i]))
            i++;
        if (i + 6 <= n && memcmp(s + i, " INFO ", 6) == 0)
            return i + 6;
    }
    return 0;
}

/* ci_prefix() of a line known only by its first wn bytes (cut: the line goes on beyond them):
 * the same answer, or -1 when it depends on what lies beyond. */
static ssize_t ci_prefix_window(const char *s, size_t wn, bool cut)
{
    /* "n > k" for the whole line's n: 1, 0, or -1 unknown */
#define LEN_GT(k) (wn > (k) ? 1 : cut ? -1 : 0)
    int gt = LEN_GT(8);
    if (gt < 0)
        return -1;
    if (gt && memcmp(s, "[task ", 6) == 0) {
        size_t lim = cut ? 64 : (wn < 64 ? wn : 64);
        for (size_t i = 6; i + 1 < lim; i++) {
            if (i + 1 >= wn)
                return -1;
            if (s[i] == ']')
                return (s[i - 1] == 'Z' && s[i + 1] == ' ') ? (ssize_t)i + 2 : 0;
        }
        return 0;
    }
    if ((gt = LEN_GT(12)) < 0)
        return -1;
    if (gt && is_digit(s[0]) && is_digit(s[1]) && s[2] == ':' && is_digit(s[3]) &&
        is_digit(s[4]) && s[5] == ':' && is_digit(s[6]) && is_digit(s[7]) && s[8] == ' ') {
        size_t i = 8;
        while (i < wn && s[i] == ' ')
            i++;
        size_t w = i;
        while (i < wn && is_upper(s[i]))
            i++;
        if (i == wn && cut)
            return -1;
        if (i > w && i + 3 <= wn && memcmp(s + i, " - ", 3) == 0)
            return (ssize_t)i + 3;
        if (i > w && i + 3 > wn && cut)
            return -1;
        if (i > w && !cut && i + 2 == wn && memcmp(s + i, " -", 2) == 0)
            return (ssize_t)wn;
        return 0;
    }
    if ((gt = LEN_GT(6)) < 0)
        return -1;
    if (gt && is_digit(s[0])) {
        size_t i = 0;
        while (i < wn && i < 20 && is_digit(s[i]))
            i++;
        if (i + 6 > wn)
            return cut ? -1 : 0;
        if (memcmp(s + i, " INFO ", 6) == 0)
            return (ssize_t)i + 6;
    }
    return 0;
#undef LEN_GT
}

/* Copy line without ANSI CSI sequences and charset designations into tl->strip. */
static bool strip_escapes(struct testlog *tl, const char *s, size_t n, const char **out, size_t *outn)
{
    if (n > tl->strip_cap) {
        size_t cap = n < 256 ? 256 : n;
        char *p = realloc(tl->strip, cap);
        if (!p)
            return false;
        tl->strip = p;
        tl->strip_cap = cap;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (s[i] != '\x1b') {
            tl->strip[o++] = s[i++];
            continue;
        }
        if (i + 1 < n && s[i + 1] == '[') {
            size_t j = i + 2;
            while (j < n && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] <= 0x3f)
                j++; /* parameter and intermediate bytes */
            while (j < n && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] <= 0x2f)
                j++;
            i = j < n ? j + 1 : n; /* final byte 0x40..0x7e */
        } else if (i + 2 < n && (s[i + 1] == '(' || s[i + 1] == ')')) {
            i += 3;
        } else {
            i++;
        }
    }
    *out = tl->strip;
    *outn = o;
    return true;
}

static void strip_line(struct testlog *tl, const char *line, size_t len, const char **ret,
                       size_t *ret_len)
{
    const char *s = line;
    size_t n = len;
    if (n && s[n - 1] == '\r')
        n--;
    if (memchr(s, '\x1b', n)) {
        const char *o;
        size_t on;
        if (strip_escapes(tl, s, n, &o, &on)) {
            s = o;
            n = on;
        }
    }
    for (int k = 0; k < 3; k++) { /* prefixes can stack: [task …] HH:MM:SS INFO - 12 INFO … */
        size_t p = ci_prefix(s, n);
        if (!p)
            break;
        s += p;
        n -= p;
    }
    *ret = s;
    *ret_len = n;
}

/* ---- prefilter ---- */

/* The first word of s (the bytes before its first space, at most 4096) holds a '.' (tl_format).
 * With raw, s is not stripped yet: an escape byte then counts as a '.', since stripping it may
 * reveal one (or join the word with what follows a space inside the escape). */
static bool first_word_dotted(const char *s, size_t n, bool raw)
{
    size_t lim = n < 4096 ? n : 4096;
    for (size_t i = 0; i < lim && s[i] != ' '; i++)
        if (s[i] == '.' || (raw && s[i] == '\x1b'))
            return true;
    return false;
}

/* s[0..n) holds an escape byte: inline, as n is at most 64 here, too short to pay for a call. */
static inline bool has_escape(const char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    const __m128i esc = _mm_set1_epi8('\x1b');
    for (; i + 16 <= n; i += 16)
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(s + i)), esc)))
            return true;
#endif
    for (; i < n; i++)
        if (s[i] == '\x1b')
            return true;
    return false;
}

/* The idle parsers that may take stripped line s (n > 0 bytes) by its first bytes. */
static fmt_mask by_start(const struct testlog *tl, const char *s, size_t n)
{
    unsigned char a = (unsigned char)s[0];
    if (n < 2)
        return tl->by_byte[a];
    return tl->by_first[a] | tl->pair_rows[tl->pair_row[a]][(unsigned char)s[1]];
}

/* True when no parser can take the line (len > 0), decided without stripping it: what stripping
 * would change is looked at only as far as the decision needs (false: undecided, or some parser
 * may take it). */
static bool surely_untaken(const struct testlog *tl, const char *s, size_t n)
{
    if (tl->busy)
        return false;
    if (s[n - 1] == '\r')
        n--;
    if (!n)
        return true;
    if (s[0] == '\x1b')
        return false;
    if (s[0] == '[' || is_digit(s[0])) {
        /* CI prefixes, read in the first 64 bytes when those hold no escape */
        size_t wn = n < 64 ? n : 64;
        bool cut = n > wn;
        if (has_escape(s, wn))
            return false;
        size_t off = 0;
        for (int k = 0; k < 3; k++) {
            ssize_t p = ci_prefix_window(s + off, wn - off, cut);
            if (p < 0)
                return false;
            if (!p)
                break;
            off += (size_t)p;
        }
        if (off == n)
            return true; /* nothing but prefixes */
        if (s[off] == '\x1b')
            return false;
        s += off;
        n -= off;
    }
    /* s[0] is the stripped line's first byte; so is s[1] its second unless an escape starts there */
    fmt_mask cand = n >= 2 && s[1] == '\x1b' ? tl->by_byte[(unsigned char)s[0]] : by_start(tl, s, n);
    return !cand && !(tl->dotted && first_word_dotted(s, n, true));
}


/* A line some parser may take: strip it and offer it to them in priority order. Kept out of
 * testlog_line so that the common case, a line no parser takes, runs in a small frame. */
static __attribute__((noinline)) void dispatch(struct testlog *tl, const char *line, size_t len,
                                               uint64_t arrival_ns)
{
    const char *s;
    size_t n;
    strip_line(tl, line, len, &s, &n);
    if (!n)
        return;
    struct tl_event ev[TL_MAX_EVENTS];
    fmt_mask cand = by_start(tl, s, n) | tl->busy;
    fmt_mask maybe = tl->dotted & ~cand; /* decided by the first word, when their turn comes */
    if (tl->capturing) {
        cand = tl->capturing & (fmt_mask)-tl->capturing;
        maybe = 0;
    }
    for (;;) {
        if (maybe && (!cand || __builtin_ctz(maybe) < __builtin_ctz(cand))) {
            if (first_word_dotted(s, n, false))
                cand |= maybe;
            maybe = 0;
            continue;
        }
        if (!cand)
            return;
        unsigned i = (unsigned)__builtin_ctz(cand);
        cand &= (fmt_mask)(cand - 1);
        struct fmt_slot *fs = &tl->fmts[i];
        int k = fs->f->parse(fs->state, s, n, arrival_ns, ev);
        if ((tl->can_busy >> i) & 1) {
            if (fs->f->busy(fs->state))
                tl->busy |= (fmt_mask)(1u << i);
            else
                tl->busy &= (fmt_mask)~(1u << i);
        }
        if ((tl->can_capture >> i) & 1) {
            if (fs->f->captures(fs->state))
                tl->capturing |= (fmt_mask)(1u << i);
            else
                tl->capturing &= (fmt_mask)~(1u << i);
        }
        if (k <= 0)
            continue;
        if (k > TL_MAX_EVENTS)
            k = TL_MAX_EVENTS;
        tl->stats.recognised++;
        for (int j = 0; j < k; j++)
            handle(tl, &ev[j], arrival_ns);
        while (fs->f->more && (k = fs->f->more(fs->state, ev)) > 0)
            for (int j = 0; j < k && j < TL_MAX_EVENTS; j++)
                handle(tl, &ev[j], arrival_ns);
        return;
    }
}

/* ---- public entry points ---- */

void testlog_line(struct testlog *tl, int stream, const char *line, size_t len, bool truncated,
                  uint64_t arrival_ns)
{
    (void)truncated;
    untail(tl, stream);
    tl->stats.lines++;
    if (!tl->nfmts || !len || surely_untaken(tl, line, len))
        return;
    dispatch(tl, line, len, arrival_ns);
}


#define TL_TAIL_MAX 4096

static void read_tail(struct testlog *tl, int stream, const char *head, size_t len, uint64_t arrival_ns)
{
    const char *s;
    size_t n;
    strip_line(tl, head, len, &s, &n);
    if (!n)
        return;
    for (size_t i = 0; i < tl->nfmts; i++) {
        struct fmt_slot *fs = &tl->fmts[i];
        /* A parser that owns memory cannot be read on a copy of its state. */
        if (fs->f->release)
            continue;
        if (fs->state)
            memcpy(tl->tail_state, fs->state, fs->f->state_size);
        struct tl_event ev[TL_MAX_EVENTS];
        int k = fs->f->parse(fs->state ? tl->tail_state : NULL, s, n, arrival_ns, ev);
        for (int j = 0; j < k && j < TL_MAX_EVENTS; j++) {
            /* Only a start: an end on half a line ("ok 1 - fo") may not be the end it reads as.
             * A start of a test already open, or one past the open tests' memory bound, is left
             * to the whole line. */
            if (ev[j].kind != TLE_TEST_START || !ev[j].id.n)
                continue;
            uint64_t t = event_time(tl, &ev[j], arrival_ns);
            ssize_t dup = find_open(tl, ev[j].id, ev[j].scope, false);
            if (dup >= 0 && tl->open[dup].tail == stream && tl->open[dup].start_ns == t)
                tl->open[dup].tail_seen = true;
            if (dup >= 0 || tl->open_bytes + open_cost(ev[j].id.n, ev[j].scope.n) > TESTLOG_OPEN_BYTES_MAX)
                continue;
            size_t before = tl->nopen;
            test_start(tl, &ev[j], t);
            if (tl->nopen > before) {
                tl->open[tl->nopen - 1].tail = (uint8_t)stream;
                tl->open[tl->nopen - 1].tail_seen = true;
            }
        }
        if (k > 0)
            return;
    }
}

void testlog_line_tail(struct testlog *tl, int stream, const char *head, size_t len,
                       uint64_t arrival_ns)
{
    /* A test's start is a short line: a long tail (a progress bar, a huge line coming in many
     * chunks) is not read again at every chunk. */
    if (tl->nfmts && len && len <= TL_TAIL_MAX && tl->tail_state && !surely_untaken(tl, head, len))
        read_tail(tl, stream, head, len, arrival_ns);
    /* What the tail no longer starts is taken back; what it starts again stays as it was, so a
     * test printing without a newline costs the stream nothing per chunk. */
    untail(tl, stream);
    for (size_t i = 0; i < tl->nopen; i++)
        tl->open[i].tail_seen = false;
}

void testlog_line_begins(struct testlog *tl, const char *head, size_t len, uint64_t arrival_ns)
{
    if (tl->nfmts && len && !surely_untaken(tl, head, len))
        note_anchor(tl, arrival_ns);
}

void testlog_tree_sample(struct testlog *tl, uint64_t rss)
{
    for (size_t i = 0; i < tl->nopen; i++)
        if (rss > tl->open[i].max_rss)
            tl->open[i].max_rss = rss;
    for (unsigned i = 0; i < tl->nanchors; i++)
        if (rss > tl->anchors[i].max_rss)
            tl->anchors[i].max_rss = rss;
}

void testlog_each_open(const struct testlog *tl, void (*fn)(void *ctx, const char *id), void *ctx)
{
    char *name = malloc(2 * TL_ID_MAX + 2); /* scope/id, as the test's marker names it */
    if (!name)
        return;
    for (size_t i = 0; i < tl->nopen; i++) {
        const struct open_test *ot = &tl->open[i];
        size_t o = 0;
        if (ot->scope.n) {
            memcpy(name, ot->scope.p, ot->scope.n);
            name[ot->scope.n] = '/';
            o = ot->scope.n + 1;
        }
        if (ot->id.n)
            memcpy(name + o, ot->id.p, ot->id.n);
        name[o + ot->id.n] = '\0';
        fn(ctx, name);
    }
    if (!tl->nopen && tl->last_unannounced && tl->stats.tests) {
        snprintf(name, 2 * TL_ID_MAX + 2, "after %" PRIu64 ", %s", tl->stats.tests, tl->last_name);
        fn(ctx, name);
    }
    free(name);
}

/* The arguments of a /proc command line: the next one after *i (0: the first), or false. */
static bool next_arg(const char *cmd, size_t n, size_t *i, const char **ret, size_t *ret_len)
{
    if (*i >= n)
        return false;
    const char *a = cmd + *i;
    const char *z = memchr(a, '\0', n - *i);
    *ret_len = z ? (size_t)(z - a) : n - *i;
    *ret = a;
    *i += *ret_len + 1;
    return true;
}

static bool base_is(const char *a, size_t n, const char *name)
{
    const char *slash = memrchr(a, '/', n);
    size_t off = slash ? (size_t)(slash - a) + 1 : 0;
    return n - off == strlen(name) && memcmp(a + off, name, n - off) == 0;
}

bool testlog_harness_child(const char *parent, size_t parent_n, const char *self, size_t self_n,
                           const char **ret_file, size_t *ret_len)
{
    /* The parent: "prove ..." or "perl .../prove ..." (the script's interpreter first), or a
     * perl with -MTest::Harness (ExtUtils::MakeMaker's "make test"). */
    bool harness = false;
    const char *a;
    size_t n, i = 0;
    for (int k = 0; k < 2 && next_arg(parent, parent_n, &i, &a, &n); k++)
        harness = harness || base_is(a, n, "prove");
    for (i = 0; !harness && next_arg(parent, parent_n, &i, &a, &n);)
        harness = n == 15 && memcmp(a, "-MTest::Harness", 15) == 0;
    if (!harness)
        return false;
    /* The child: the test file is its last argument (after the interpreter's switches). */
    const char *last = NULL;
    size_t last_n = 0, args = 0;
    for (i = 0; next_arg(self, self_n, &i, &a, &n); args++)
        if (n) {
            last = a;
            last_n = n;
        }
    if (args < 2 || !last || last[0] == '-')
        return false;
    *ret_file = last;
    *ret_len = last_n;
    return true;
}

void testlog_open_running(struct testlog *tl, const char *name, size_t len, uint64_t start_ns)
{
    struct tl_event ev;
    tl_event_init(&ev, TLE_TEST_START);
    ev.id = tl_str_make(name, len);
    if (!len || find_open(tl, ev.id, ev.scope, false) >= 0)
        return;
    test_start(tl, &ev, start_ns);
}

size_t testlog_open_count(const struct testlog *tl) { return tl->nopen; }

const char *testlog_open_at(const struct testlog *tl, uint64_t t_ns)
{
    for (size_t i = tl->nopen; i-- > 0;) /* ordered by start */
        if (tl->open[i].start_ns <= t_ns)
            return tl->open[i].id.p ? tl->open[i].id.p : "";
    return NULL;
}

void testlog_finish(struct testlog *tl, uint64_t now_ns, bool timed_out)
{
    for (size_t i = 0; i < tl->nfmts; i++) {
        struct fmt_slot *fs = &tl->fmts[i];
        struct tl_event ev[TL_MAX_EVENTS];
        int k = fs->f->flush ? fs->f->flush(fs->state, ev) : 0;
        for (int j = 0; j < k && j < TL_MAX_EVENTS; j++)
            handle(tl, &ev[j], now_ns);
        while (fs->f->more && (k = fs->f->more(fs->state, ev)) > 0)
            for (int j = 0; j < k && j < TL_MAX_EVENTS; j++)
                handle(tl, &ev[j], now_ns);
        if (((tl->can_busy >> i) & 1) && !fs->f->busy(fs->state))
            tl->busy &= (fmt_mask)~(1u << i);
        if (((tl->can_capture >> i) & 1) && !fs->f->captures(fs->state))
            tl->capturing &= (fmt_mask)~(1u << i);
    }
    tl->finishing = true; /* what the tests still open run is not left behind */
    while (tl->nopen)
        close_with_status(tl, 0, timed_out ? "TIMEOUT" : "INCOMPLETE",
                          timed_out ? "still running when the run timed out" : NULL, now_ns);
    while (tl->nnest)
        nest_emit(tl, tl->nnest - 1, now_ns);
    while (tl->nprocs)
        process_emit(tl, 0, NULL, now_ns);
}

void testlog_get_stats(const struct testlog *tl, struct testlog_stats *ret) { *ret = tl->stats; }

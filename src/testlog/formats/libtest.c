/* Rust libtest, text and JSON (testlog/formats.h has the result mapping).
 *
 * Text:
 *   test a::b ... ok | FAILED | ignored[, reason]   → TLE_TEST_START (first byte: serial libtest
 *       prints the name when the test starts) + TLE_TEST_END at TL_AT_LINE_END. Parallel libtest
 *       prints the whole line at the end; the test then shows ~0 long.
 *   test a::b ... ok <0.001s>  (-Z unstable-options --report-time) the test's own time:
 *       duration_ms; "FAILED (time limit exceeded) <0.160s>" (--ensure-time) → TIMEOUT.
 *   test a::b - should panic ... ok   (#[should_panic]) id a::b.
 *   test a::b ... <output>    (--nocapture) → TLE_TEST_START; a later line "ok"/"FAILED"/"ignored"
 *       ends it.
 *   running N tests           → TLE_SUITE_START; "test result: ok. ... finished in 0.01s" →
 *       TLE_SUITE_END (PASS/FAIL, duration). The suite is named by cargo's "Running unittests
 *       src/lib.rs (...)" / "Doc-tests x" line when this state saw it (cargo prints it on stderr),
 *       else "libtest".
 * JSON (-Z unstable-options --format=json [--report-time]):
 *   {"type":"suite","event":"started"|"ok"|"failed",...,"exec_time":s}
 *   {"type":"test","event":"started"|"ok"|"failed"|"ignored","name":..,"exec_time":s,
 *    "message":..,"reason":..}     ("timeout" is a warning, not a result: ignored)
 * ok → PASS, failed/FAILED → FAIL, ignored → SKIP (reason = message); a failure for the reason
 * "time limit exceeded" (--ensure-time) → TIMEOUT, with that message.
 */
#include "testlog/formats.h"

#include <cjson/cJSON.h>

#include "testlog/testlog.h"

struct libtest_state {
    bool pending;
    char id[1024];
    size_t id_len;
    char suite[512];
    size_t suite_len;
    char msg[1024];
};

static struct tl_str suite_id(const struct libtest_state *st)
{
    return st->suite_len ? tl_str_make(st->suite, st->suite_len) : TL_LIT("libtest");
}

static const char time_limit[] = "time limit exceeded";

/* "ok", "FAILED", "FAILED (time limit exceeded)", "ignored[, reason]", each with an optional
 * " <0.001s>" (--report-time), which gives *ret_ms (NAN without). */
static bool text_result(struct tl_str s, enum tl_outcome *ret, struct tl_str *ret_msg,
                        double *ret_ms)
{
    s = tl_trim(s);
    *ret_msg = tl_str_make(NULL, 0);
    *ret_ms = __builtin_nan("");
    if (s.n > 4 && s.p[s.n - 1] == '>' && s.p[s.n - 2] == 's') {
        const char *lt = memrchr(s.p, '<', s.n);
        double v;
        if (lt && lt > s.p && lt[-1] == ' ' &&
            tl_parse_number(tl_str_make(lt + 1, (size_t)(s.p + s.n - 2 - lt - 1)), &v) && v >= 0) {
            *ret_ms = v * 1000.0;
            s = tl_trim(tl_str_make(s.p, (size_t)(lt - s.p)));
        }
    }
    if (tl_str_eq(s, "ok"))
        *ret = TL_PASSED;
    else if (tl_str_eq(s, "FAILED"))
        *ret = TL_FAILED;
    else if (tl_str_eq(s, "FAILED (time limit exceeded)")) {
        *ret = TL_TIMED_OUT;
        *ret_msg = TL_LIT(time_limit);
    } else if (TL_PREFIX(s.p, s.n, "ignored") && (s.n == 7 || s.p[7] == ',')) {
        *ret = TL_SKIPPED;
        if (s.n > 8)
            *ret_msg = tl_trim(tl_str_make(s.p + 8, s.n - 8));
    } else
        return false;
    return true;
}

static int parse_json(struct libtest_state *st, const char *line, size_t len, struct tl_event *ev)
{
    if (!memmem(line, len, "\"type\"", 6) || !memmem(line, len, "\"event\"", 7))
        return 0;
    cJSON *o = cJSON_ParseWithLength(line, len);
    int n = 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "event");
    if (!cJSON_IsString(t) || !cJSON_IsString(e))
        goto out;
    const char *type = t->valuestring, *event = e->valuestring;
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "exec_time");
    double dur = cJSON_IsNumber(x) && x->valuedouble >= 0 ? x->valuedouble * 1000.0
                                                          : __builtin_nan("");
    bool started = !strcmp(event, "started");
    enum tl_outcome oc = TL_PASSED;
    if (!strcmp(event, "ok"))
        oc = TL_PASSED;
    else if (!strcmp(event, "failed"))
        oc = TL_FAILED;
    else if (!strcmp(event, "ignored"))
        oc = TL_SKIPPED;
    else if (!started)
        goto out;
    if (!strcmp(type, "suite")) {
        tl_event_init(ev, started ? TLE_SUITE_START : TLE_SUITE_END);
        ev->id = suite_id(st);
        if (!started) {
            ev->status = oc == TL_PASSED ? TL_LIT("PASS") : TL_LIT("FAIL");
            ev->t.duration_ms = dur;
        }
        n = 1;
    } else if (!strcmp(type, "test")) {
        struct tl_str id = tl_json_copy(o, "name", st->id, sizeof st->id);
        if (!id.n)
            goto out;
        if (started) {
            tl_event_init(ev, TLE_TEST_START);
            ev->id = id;
        } else {
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "reason");
            bool limit = oc == TL_FAILED && cJSON_IsString(r) && !strcmp(r->valuestring, time_limit);
            tl_set_result(ev, id, tl_str_make(NULL, 0), limit ? TL_TIMED_OUT : oc);
            ev->t.duration_ms = dur;
            ev->message = tl_json_copy(o, "message", st->msg, sizeof st->msg);
            if (limit && !ev->message.n)
                ev->message = TL_LIT(time_limit);
        }
        n = 1;
    }
out:
    cJSON_Delete(o);
    return n;
}

static int libtest_parse(void *state, const char *line, size_t len, uint64_t arrival_ns,
                         struct tl_event *ev)
{
    struct libtest_state *st = state;
    enum tl_outcome oc;
    struct tl_str msg;
    if (len >= 8 && line[0] == 't' && TL_PREFIX(line, len, "test ")) {
        if (TL_PREFIX(line, len, "test result: ")) {
            tl_event_init(ev, TLE_SUITE_END);
            ev->id = suite_id(st);
            ev->status = TL_PREFIX(line + 13, len - 13, "ok") ? TL_LIT("PASS") : TL_LIT("FAIL");
            const char *f = memmem(line, len, "finished in ", 12);
            if (f) {
                struct tl_str d = tl_trim(tl_str_make(f + 12, len - (size_t)(f + 12 - line)));
                double v;
                if (d.n > 1 && d.p[d.n - 1] == 's' &&
                    tl_parse_number(tl_str_make(d.p, d.n - 1), &v) && v >= 0)
                    ev->t.duration_ms = v * 1000.0;
            }
            st->pending = false;
            return 1;
        }
        const char *dots = memmem(line + 5, len - 5, " ...", 4);
        if (!dots || dots == line + 5)
            return 0;
        const char *after = dots + 4;
        size_t an = len - (size_t)(after - line);
        if (an && after[0] != ' ')
            return 0;
        if (an >= 7 && TL_PREFIX(after, an, " bench:"))
            return 0;
        struct tl_str name = tl_str_make(line + 5, (size_t)(dots - line - 5));
        static const char panic[] = " - should panic";
        if (name.n > sizeof panic - 1 &&
            !memcmp(name.p + name.n - (sizeof panic - 1), panic, sizeof panic - 1))
            name.n -= sizeof panic - 1;
        struct tl_str id = tl_copy(st->id, sizeof st->id, name);
        st->id_len = id.n;
        tl_event_init(&ev[0], TLE_TEST_START);
        ev[0].id = id;
        double ms;
        if (text_result(tl_str_make(after, an), &oc, &msg, &ms)) {
            tl_set_result(&ev[1], id, tl_str_make(NULL, 0), oc);
            ev[1].message = msg;
            ev[1].t.duration_ms = ms;
            ev[1].t.when = TL_AT_LINE_END;
            st->pending = false;
            return 2;
        }
        st->pending = true;
        return 1;
    }
    if (len >= 8 && line[0] == '{')
        return parse_json(st, line, len, ev);
    if (len >= 13 && line[0] == 'r' && TL_PREFIX(line, len, "running ")) {
        size_t i = 8;
        while (i < len && line[i] >= '0' && line[i] <= '9')
            i++;
        if (i == 8 || !(tl_str_eq(tl_str_make(line + i, len - i), " tests") ||
                        tl_str_eq(tl_str_make(line + i, len - i), " test")))
            return 0;
        tl_event_init(ev, TLE_SUITE_START);
        ev->id = suite_id(st);
        return 1;
    }
    if (len >= 12 && line[0] == ' ') {
        struct tl_str s = tl_trim(tl_str_make(line, len));
        if (TL_PREFIX(s.p, s.n, "Running ")) {
            s = tl_str_make(s.p + 8, s.n - 8);
            const char *paren = memmem(s.p, s.n, " (", 2);
            if (paren)
                s.n = (size_t)(paren - s.p);
        } else if (!TL_PREFIX(s.p, s.n, "Doc-tests ")) {
            return 0;
        }
        st->suite_len = tl_copy(st->suite, sizeof st->suite, s).n;
        return 0;
    }
    double ms;
    if (st->pending && len <= 64 && text_result(tl_str_make(line, len), &oc, &msg, &ms)) {
        st->pending = false;
        tl_set_result(ev, tl_str_make(st->id, st->id_len), tl_str_make(NULL, 0), oc);
        ev->message = msg;
        ev->t.duration_ms = ms;
        ev->t.when = TL_AT_LINE_END;
        return 1;
    }
    return 0;
}

static bool libtest_busy(const void *state)
{
    return ((const struct libtest_state *)state)->pending;
}

const struct tl_format tl_format_libtest = {
    .name = "libtest",
    .bit = TL_FMT_LIBTEST,
    .state_size = sizeof(struct libtest_state),
    .parse = libtest_parse,
    .release = NULL,
    /* "test ...", JSON, "running N tests", cargo's indented "Running ..." */
    .first_bytes = "{ ",
    .pairs = (const char *const[]){"te", "ru", NULL},
    .busy = libtest_busy,
};

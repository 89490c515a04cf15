/* jscan.h — a validating JSON scanner over byte ranges: how the converter and the results read the
 * stream's lines, and the mozlog parser the command's JSON lines, without building a tree of them.
 *
 * Every function takes the text as [p, e) (no NUL needed) and points into it; nothing is copied or
 * allocated (but js_canonical_string). A value is validated completely as it is passed: strings
 * (escapes, control bytes, UTF-8), numbers (JSON's grammar), literals, and containers nested at most
 * 64 deep. A payload the converter copies into a profile unchecked could make the whole profile
 * unreadable, so what passes here is what may be copied.
 *
 *   struct js_iter it;
 *   struct js_member m;
 *   if (js_obj_begin(&it, line, line + len) < 0) ...not an object...
 *   while ((r = js_obj_next(&it, &m)) > 0)
 *       if (js_key_is(&m, "name")) ...m.val[0, m.val_len) is its JSON text...
 *   r < 0: invalid; r == 0: the object ended, js_skip_ws(it.p, it.e) == it.e when nothing follows
 *
 * Keys are compared as written: a key spelled with escapes is no literal's (key_escaped). Strings
 * are compared as their raw JSON text; js_canonical_string gives two spellings of one text one form.
 *
 * Two readers need more than that, and set the iterator's flags after js_obj_begin:
 *   it.loose: a string's bytes are taken as they are (raw control bytes, invalid UTF-8), only its
 *     escapes are checked. For a producer's own log lines (mozlog), whose strings are decoded and
 *     then sanitized by every sink: a stray byte in a message must not lose the test's result.
 *   it.cut (read after -1): the text ended inside the object, not an error before its end. A
 *     reader of a bounded prefix of a huge line uses the members read before the cut; a member
 *     whose value runs up to the cut (it.p == it.e after it) may itself be cut (a number).
 * js_arr_begin/js_arr_next iterate an array's elements the same way (m.val; no key).
 */
#ifndef RESMON_JSCAN_H
#define RESMON_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct jsonw;

static inline bool js_is_digit(char c) { return c >= '0' && c <= '9'; }

static inline const char *js_skip_ws(const char *p, const char *e)
{
    /* one compare for the usual byte, which is no blank */
    while (p < e && (unsigned char)*p <= ' ' && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* p at the opening quote. Returns the position after the closing quote, or NULL; *ret_escaped
 * (when not NULL) says whether the string has an escape. */
const char *js_scan_string(const char *p, const char *e, bool *ret_escaped);

/* p at the first byte of a value (no leading blanks), nested depth deep (1: a member of the
 * line's object). Returns the position after it, or NULL. */
const char *js_scan_value(const char *p, const char *e, int depth);

/* Iteration over the members of one object; every value is validated as it is passed. */
struct js_member {
    const char *key; /* raw key text between the quotes */
    size_t key_len;
    bool key_escaped;
    const char *val; /* the value's JSON text */
    size_t val_len;
    bool val_escaped; /* the value is a string with an escape */
};

struct js_iter {
    const char *p, *e;
    bool first, done;
    bool loose; /* set by the caller after js_obj_begin (see above); false by default */
    bool cut;   /* after -1: the text ended before the object did */
};

/* 0, or -1 when [p, e) does not start (after blanks) with '{'. */
int js_obj_begin(struct js_iter *it, const char *p, const char *e);
/* 1: a member; 0: the object ended (it->p is after its '}'); -1: invalid. */
int js_obj_next(struct js_iter *it, struct js_member *m);
/* The same over an array ('['): each element in m->val (m->key NULL). */
int js_arr_begin(struct js_iter *it, const char *p, const char *e);
int js_arr_next(struct js_iter *it, struct js_member *m);

/* Whether the member's key is lit (spelled without escapes). Inline: called for every member
 * with a literal, whose length the compiler then knows. */
static inline bool js_key_is(const struct js_member *m, const char *lit)
{
    size_t n = strlen(lit);
    return !m->key_escaped && m->key_len == n && memcmp(m->key, lit, n) == 0;
}
/* Whether the member's value is the string lit, spelled without escapes. */
static inline bool js_val_is_str(const struct js_member *m, const char *lit)
{
    size_t n = strlen(lit);
    return m->val_len == n + 2 && m->val[0] == '"' && memcmp(m->val + 1, lit, n) == 0;
}

/* A number's JSON text v[0, n) as a finite double (the stream's times are read without strtod). */
bool js_number(const char *v, size_t n, double *ret);
/* A non-negative integer's JSON text as a uint64_t (no sign, no fraction, no exponent). */
bool js_u64(const char *v, size_t n, uint64_t *ret);
/* A time as the stream's writer formats it (stream_format_ms: an optional '-', digits, '.',
 * digits; 15 digits at most) at p: its value, and the byte after it. NULL for any other number
 * (the full check then takes the line, and reads the same value: js_number). */
const char *js_ms(const char *p, const char *e, double *ret);

/* Count the elements of a JSON array (already validated). */
size_t js_array_count(const char *v, size_t n);

/* Whether the JSON text s[0..n) (validated) has a \u escape of a lone surrogate in a string.
 * Strict JSON has none (RFC 8259 section 8.2: a surrogate alone is no character, and has no UTF-8
 * form), resmon-run's writer never makes one, but a stream given to --recover may hold them. With
 * fix (s itself, or a copy of it), each becomes \ufffd there: the same six bytes. */
bool js_lone_surrogates(const char *s, size_t n, char *fix);

/* Decode the raw text of a JSON string (validated, without its quotes) into out, which has room
 * for n bytes (decoding never makes a string longer); its length. A lone surrogate becomes U+FFFD;
 * bytes that are not escapes are copied as they are. */
size_t js_decode_string(const char *s, size_t n, char *out);

/* Decode the raw text of a JSON string (validated, without its quotes) and append it to w
 * re-escaped canonically, so two spellings of one name intern to one stringArray entry. */
void js_canonical_string(struct jsonw *w, const char *s, size_t n);

#endif

/* jsonw.h — a small, fast writer of compact JSON into a growable buffer.
 *
 * Why not cJSON for output: markers are written on hot paths (every sample, every test line) and
 * must print 64-bit counters exactly (cJSON keeps numbers as doubles and may print exponents).
 * Output is always valid UTF-8 JSON: strings are escaped, control characters become \uXXXX and
 * invalid UTF-8 sequences become U+FFFD, whatever bytes the input holds.
 *
 * Commas are inserted automatically: call jsonw_key() then one value inside objects, values only
 * inside arrays. Nesting deeper than JSONW_MAX_DEPTH, or running out of memory, sets the sticky
 * error flag; jsonw_failed() tells, and the buffer content is then unspecified.
 *
 * struct jsonw is embedded by its users (_init/_release); buf stays NUL-terminated.
 */
#ifndef RESMON_JSONW_H
#define RESMON_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONW_MAX_DEPTH 32

struct jsonw {
    char *buf;
    size_t len, cap;
    bool failed;
    int depth;
    bool first[JSONW_MAX_DEPTH + 1]; /* no element yet at this depth */
    bool after_key;
};

void jsonw_init(struct jsonw *w);
void jsonw_release(struct jsonw *w);
/* Empty the buffer for reuse (keeps the allocation). */
void jsonw_reset(struct jsonw *w);
static inline bool jsonw_failed(const struct jsonw *w) { return w->failed; }

void jsonw_obj_open(struct jsonw *w);
void jsonw_obj_close(struct jsonw *w);
void jsonw_arr_open(struct jsonw *w);
void jsonw_arr_close(struct jsonw *w);
void jsonw_key(struct jsonw *w, const char *key);
/* A key of n bytes the caller vouches needs no escaping (a literal; a marker schema's field name,
 * which unit_markers checks): copied as it is. */
void jsonw_key_plain(struct jsonw *w, const char *key, size_t n);

void jsonw_str(struct jsonw *w, const char *s);             /* NULL writes null */
void jsonw_strn(struct jsonw *w, const char *s, size_t n);  /* any bytes */
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_uint(struct jsonw *w, uint64_t v);
/* Fixed-point with at most `decimals` digits after the point, trailing zeros trimmed but one kept
 * ("100.0"); never an exponent. NaN and infinities are written as null. */
void jsonw_double(struct jsonw *w, double v, int decimals);
void jsonw_bool(struct jsonw *w, bool v);
void jsonw_null(struct jsonw *w);
/* Finite v with exactly `decimals` (1-9) digits after the point, as printf's "%.*f" writes it,
 * into buf (JSONW_FIXED_MAX bytes; no NUL; negative zero as "0.0"), without stdio for the
 * magnitudes of a sample. Returns the length, or -1 when it does not fit. */
#define JSONW_FIXED_MAX 400
int jsonw_fixed(double v, int decimals, char *buf);
/* A value that is already valid JSON text. */
void jsonw_raw(struct jsonw *w, const char *json, size_t n);
/* Raw bytes appended with no comma logic (e.g. a trailing newline). */
void jsonw_append(struct jsonw *w, const char *s, size_t n);
/* Formatted raw text, likewise (text of any length, built as a buffer: reports, not JSON). */
void jsonw_appendf(struct jsonw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* key+value shorthands */
void jsonw_kv_str(struct jsonw *w, const char *key, const char *s);
void jsonw_kv_strn(struct jsonw *w, const char *key, const char *s, size_t n);
void jsonw_kv_int(struct jsonw *w, const char *key, int64_t v);
void jsonw_kv_uint(struct jsonw *w, const char *key, uint64_t v);
void jsonw_kv_double(struct jsonw *w, const char *key, double v, int decimals);
void jsonw_kv_bool(struct jsonw *w, const char *key, bool v);

/* Append s (n bytes) JSON-escaped, without quotes, to w: the primitive under jsonw_strn. */
void jsonw_escape(struct jsonw *w, const char *s, size_t n);

/* Length of the valid UTF-8 sequence starting at s (1..4; n > 0 bytes available), 0 if it is not
 * one (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
size_t utf8_char_len(const char *s, size_t n);

/* Length of the longest prefix of s[0..n) that is valid UTF-8 and does not end inside a
 * sequence: used to cut long strings without splitting a character. */
size_t utf8_valid_prefix(const char *s, size_t n);

/* The decimal digits of v written right-aligned so that they end just before end (at most 20
 * bytes); returns where they start. For writers of JSON text that do without stdio. */
char *jsonw_digits_before(char *end, uint64_t v);

/* How many leading bytes of s are "plain": printable ASCII other than '"' and '\\', the bytes a
 * JSON string holds as they are. Sixteen bytes at a time where SSE2 is there, eight elsewhere; the
 * escaper and the profile converter's string scanner both run on it. */
size_t json_plain_prefix(const char *s, size_t n);

#endif

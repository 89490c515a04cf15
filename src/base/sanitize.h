/* sanitize.h — text from the command (test ids, statuses, messages, command lines), made safe for
 * each kind of place resmon-run writes it to.
 *
 * What the command prints is anybody's bytes: a test id may hold ESC [ 2 J, a BEL, a C1 control
 * (U+009B is CSI to many terminals, and so is a raw 0x9B byte to those reading 8-bit controls), a
 * carriage return, a line feed, or bytes that are no UTF-8 at all. Written raw it would move a
 * terminal's cursor, recolour or retitle it, end a GitHub workflow command and start another, or
 * break out of a Markdown table row and become a heading. Every sink of such text goes through
 * here, one rule per kind of sink:
 *
 *   SANITIZE_TERMINAL      stderr (the summary, messages) and --compare's text: every control
 *                          character (C0 with TAB, CR and LF, DEL, C1 U+0080-U+009F) and every
 *                          byte that is not part of a valid UTF-8 character becomes '?'.
 *   SANITIZE_GHA_DATA      a workflow command's message: as TERMINAL, except that '%', CR and LF
 *                          become the runner's escapes %25, %0D and %0A (they are the runner's
 *                          line breaks, shown as such in the annotation).
 *   SANITIZE_GHA_PROPERTY  a workflow command's property value (an annotation's title): as DATA,
 *                          and ':' and ',' become %3A and %2C.
 *   SANITIZE_MARKDOWN      a Markdown job summary's or --compare --markdown's line or table cell:
 *                          TAB, CR and LF become a space (a line ending, lone CR included, ends a
 *                          table row), other controls and invalid bytes '?', and the punctuation
 *                          GitHub-flavoured Markdown gives a meaning inside a line
 *                          (\ ` * _ [ ] < > | ~ &) gets a backslash before it (valid before any
 *                          ASCII punctuation). What only means something at a line's start ('#',
 *                          '-') cannot, inside a row that starts with "| ".
 *   SANITIZE_TEXT_FILE     a text file people read in a terminal (the dump at a stop,
 *                          FILE.stacks.txt): as TERMINAL, but TAB and LF stay, so that the
 *                          text keeps its lines and columns.
 *
 * Valid UTF-8 characters other than controls are kept as they are, so names in any script stay
 * readable. Pure functions, no allocation.
 */
#ifndef RESMON_SANITIZE_H
#define RESMON_SANITIZE_H

#include <stddef.h>

enum sanitize_sink {
    SANITIZE_TERMINAL,
    SANITIZE_GHA_DATA,
    SANITIZE_GHA_PROPERTY,
    SANITIZE_MARKDOWN,
    SANITIZE_TEXT_FILE,
};

/* Hand s[0..n) (NULL: nothing), made safe for sink, to put in runs of bytes; ctx is put's. */
void sanitize(enum sanitize_sink sink, const char *s, size_t n, void (*put)(void *ctx, const char *p, size_t len),
              void *ctx);

/* The same into dst (size > 0 bytes, NUL-terminated): as much of the safe text as fits whole,
 * never part of a character or of an escape. Returns its length (< size). */
size_t sanitize_into(enum sanitize_sink sink, char *dst, size_t size, const char *s, size_t n);

/* How many leading bytes of s[0..n) to keep so that at most max are kept and no UTF-8 character
 * is cut (a byte that starts no valid character counts as one character). */
size_t sanitize_cut(const char *s, size_t n, size_t max);

/* The length of s[0..n) without the first bytes of a character cut short at its end, as snprintf
 * leaves them when it truncates by bytes; n when the text does not end so. */
size_t sanitize_uncut(const char *s, size_t n);

#endif

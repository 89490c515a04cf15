/* linebuf.h — splitting a byte stream into lines for the parsers, with bounded memory.
 *
 * Bytes go on to their destination untouched elsewhere; the splitter only sees a copy. A line
 * longer than max_line delivers its first max_line bytes (flagged truncated) and the rest is
 * skipped up to the next '\n'. linebuf_flush() delivers a final unterminated line at end of output.
 * The delivered line excludes the '\n' (a trailing '\r' is kept: parsers strip it for matching).
 * arrival_ns of a line is the time its first byte arrived.
 */
#ifndef RESMON_LINEBUF_H
#define RESMON_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*linebuf_cb)(void *ctx, const char *line, size_t len, bool truncated, uint64_t arrival_ns);

struct linebuf;

int linebuf_new(size_t max_line, struct linebuf **ret);
void linebuf_free(struct linebuf *lb);
void linebuf_feed(struct linebuf *lb, const char *data, size_t len, uint64_t now_ns, linebuf_cb cb, void *ctx);
void linebuf_flush(struct linebuf *lb, linebuf_cb cb, void *ctx);
/* The line begun and not complete yet: its bytes so far (NULL when there is none, or while the
 * rest of a truncated line is being skipped), and when its first byte arrived. */
const char *linebuf_pending(const struct linebuf *lb, size_t *ret_len, uint64_t *ret_arrival_ns);

#endif

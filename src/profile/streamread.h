/* streamread.h — the one reader of a run's stream (stream.h writes it): its lines, and what each
 * line is. The converter (profile.h) and the reports' reader (report/results.h) both read the
 * stream through it, so that they take the same lines the same way: the same torn, over-long and
 * unfinished lines skipped, the same line types, a marker's name, times and payload found the same
 * way whatever the order of its keys.
 *
 * LINES. sread_next gives the stream's lines one by one from a file read with pread (the fd's
 * offset is not used). A line longer than SREAD_MAX_LINE is skipped and counted (skipped). In
 * follow mode the file may still grow: only complete lines are given, the unfinished tail waits
 * for its newline (sread_torn_tail says whether there is one); otherwise the last line is given
 * without its newline at the end of the file (a torn write, or a producer that omits it). In fed
 * mode (follow, set by the caller) the bytes are not read back but handed over by the writer as
 * they land in the file (sread_append), in file order; trusted says that every line handed over
 * is one the writer made whole, in its layout.
 *
 * TYPES. A line's type is its "type" member (writers put it first; elsewhere it is found by a
 * scan of the members before it). A marker line is read by sline_marker: in the writer's layout
 * (stream.h) without scanning its payload again when the caller allows it (writer), else with
 * every value validated (jscan.h). Open and close lines (profile.h, STATE LINES) by sline_state,
 * every value validated. Every value a line gives points into the line.
 */
#ifndef RESMON_STREAMREAD_H
#define RESMON_STREAMREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jscan.h"

/* The longest line taken; longer ones are skipped and counted. */
#define SREAD_MAX_LINE (16u * 1024 * 1024 - 1)

struct sread {
    int fd;
    char *buf;
    size_t cap, start, len; /* buf[0..len) holds input bytes from file offset base */
    uint64_t base;
    bool eof, skipping;
    bool follow;  /* the file still grows: end of data is not the end of the last line */
    bool fed;     /* follow's bytes are handed over by the writer (sread_append), not read */
    bool trusted; /* fed, and every line handed over is one the writer made whole: its marker
                     lines may be taken in the writer's layout */
    uint64_t skipped; /* over-long lines skipped */
};

/* A reader of fd from offset 0 (follow: the file still grows). 0 or -ENOMEM. */
int sread_init(struct sread *r, int fd, bool follow);
void sread_release(struct sread *r);
/* 1: a line (without its newline) at *ret_line, file offset *ret_off; 0: no more for now (follow)
 * or end of input; -errno. The line stays valid until the next call. */
int sread_next(struct sread *r, const char **ret_line, size_t *ret_len, uint64_t *ret_off);
/* Append bytes the writer has just written at the end of the file (fed mode). */
int sread_append(struct sread *r, const char *buf, size_t len);
/* In follow mode, after the lines in hand are taken: a buffer a long line made grow goes back to
 * its size while the run goes on. */
void sread_shrink(struct sread *r);
/* In follow mode, whether an unfinished line waits for its newline (at a write, a torn one). */
bool sread_torn_tail(const struct sread *r);

/* Whether the line is a stream's meta line (its first: it starts with {"type":"meta"). */
bool sline_is_meta(const char *line, size_t len);

enum sline_type {
    SLINE_OTHER, /* not an object, no type, or a type not listed here (another meta line...) */
    SLINE_MARKER,
    SLINE_OPEN,
    SLINE_CLOSE,
    SLINE_THREAD,
    SLINE_CLOCK,
    SLINE_COUNTER,
    SLINE_STACK,
    SLINE_MESSAGE,
    SLINE_CPU, /* a sampled-stacks line: cpuprofile, cpuspace, cpumap, cputhread, cpusamples, cpuend */
};
enum sline_type sline_type(const char *line, size_t len);

/* A marker line's members (NULL: absent). */
struct sline_marker {
    struct js_member mname, mstart, mend, mdata, mcat;
    struct js_member *name, *start, *end, *data, *cat;
    double st, en; /* startTime, endTime (NAN: null or absent) */
};
/* A marker line's members, every value validated; with writer, a line in the writer's layout is
 * taken without scanning its payload (the caller trusts it, or validates it itself). false: not
 * an object, invalid, or without a string name, a numeric startTime, an endTime that is a number
 * or null. The payload's and the category's types are the caller's to check. */
bool sline_marker(const char *line, size_t len, bool writer, struct sline_marker *f);

/* An open or close line, every value validated: false unless it is an object with string kind
 * and key. */
struct sline_state {
    struct js_member kind, key, name, start_ns, start_ms, cat, data, cost;
    bool has_kind, has_key, has_name, has_start_ns, has_start_ms, has_cat, has_data, has_cost;
};
bool sline_state(const char *line, size_t len, struct sline_state *f);

#endif

/* markers.h — how every producer of profile markers (sampler, test-log parsers, the run's own
 * events, records from the command) hands them on, and how each marker type is defined.
 *
 * A marker is: a name, a start time and an optional end time (monotonic nanoseconds, see util.h),
 * a category (0 Other, 1 Phases, 2 Tasks — the profile's meta.categories), and a payload that is
 * a complete compact JSON object whose first key is "type" (the marker schema's name).
 *
 * ONE OWNER PER MARKER TYPE. Each type is a struct marker_type defined by the module that builds
 * its payloads, next to the code that builds them (sampler*.c: the machine and tree samples and
 * processes; testlog_tests.c: tests; testlog_events.c: statuses, crashes; usermark.c: phases;
 * runmarks.c: the run's own events; this file: Text and Warning, which several producers use).
 * The type lists its fields;
 * meta.markerSchema is written from these definitions (marker_schemas_write), and payloads are
 * built with the mpay_* calls, which take a field by its index in the type's table — so every
 * key a payload holds is a field of its schema, by construction. A field is required unless it
 * is MF_OPTIONAL: required fields are written in every payload, optional ones whenever they have
 * a value (a test's expected status only when it differs). The tests' checker holds profiles to
 * exactly that (tests/check-profile --schemas).
 *
 * The sink decides what happens to markers: the stream module writes one JSONL line per marker;
 * unit tests capture them in memory. A sink must accept any marker at any time, and must not call
 * back into the producer.
 *
 * Besides markers, producers may record *state lines*: a JSON object whose "type" is not "meta",
 * "thread" or "marker" (e.g. {"type":"open",...} for a test that started and has not ended, or a
 * counter's definition, below). Readers of the stream ignore unknown types; the converter
 * (profile.h) uses them. The line passed must be a complete compact JSON object without newline.
 *
 * A state line that a later one undoes (a test's open line, which its close line ends) may be
 * recorded with marker_state_open: a sink that holds lines before writing them returns a handle,
 * and marker_state_retract(handle) then takes the line back if it has not been written yet, in
 * which case the producer leaves out its closing line too. A dense test log (tests that start and
 * end within one chunk of output) then costs the stream no open/close pair per test: on disk, at
 * every moment, the stream still says what is open.
 *
 * COUNTERS. A sample marker's figure can also be drawn as a counter track of the profile (the
 * front-end's own graphs, read by tools that read counters). A producer declares a counter once,
 * with a {"type":"counter",...} state line (marker_counter_line): which marker name and numeric
 * field it is read from, and how (MCOUNT_*); the converter then builds the counter's samples from
 * those markers. A marker type whose figure a counter draws has no "graphs" of its own, so that
 * nothing is drawn twice; the markers stay (their fields carry the figures, and other tools read
 * them).
 */
#ifndef RESMON_MARKERS_H
#define RESMON_MARKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jsonw.h"

/* end_ns value of an instant marker (profile: endTime null, phase 0). */
#define MARKER_INSTANT UINT64_MAX

enum marker_category {
    CAT_OTHER = 0,
    CAT_PHASES = 1,
    CAT_TASKS = 2,
    /* a dumped thread's state, the category of its stacks (profile_stacks.h) */
    CAT_RUNNING = 3,
    CAT_SLEEPING = 4,
    CAT_DISK_WAIT = 5,
    CAT_STOPPED = 6,
};

struct marker_sink {
    void (*marker)(void *ctx, const char *name, uint64_t start_ns, uint64_t end_ns, int category,
                   const char *data, size_t data_len);
    void (*state)(void *ctx, const char *line, size_t len);
    /* optional: as state, returning a handle for state_retract (0: cannot be taken back) */
    uint64_t (*state_open)(void *ctx, const char *line, size_t len);
    /* optional: take back the line of handle if still unwritten (true), else false */
    bool (*state_retract)(void *ctx, uint64_t handle);
    void *ctx;
};

static inline void marker_emit(const struct marker_sink *s, const char *name, uint64_t start_ns,
                               uint64_t end_ns, int category, const char *data, size_t data_len)
{
    if (s && s->marker)
        s->marker(s->ctx, name, start_ns, end_ns, category, data, data_len);
}

static inline void marker_state(const struct marker_sink *s, const char *line, size_t len)
{
    if (s && s->state)
        s->state(s->ctx, line, len);
}

static inline uint64_t marker_state_open(const struct marker_sink *s, const char *line, size_t len)
{
    if (s && s->state_open)
        return s->state_open(s->ctx, line, len);
    marker_state(s, line, len);
    return 0;
}

static inline bool marker_state_retract(const struct marker_sink *s, uint64_t handle)
{
    return handle && s && s->state_retract && s->state_retract(s->ctx, handle);
}

/* ---- marker types ------------------------------------------------------------------------- */

enum marker_field_flags {
    MF_OPTIONAL = 1 << 0, /* written only when there is a value */
    MF_HIDDEN = 1 << 1,   /* "hidden": read by labels and the colour, not listed in tooltips */
};

struct marker_field {
    const char *key;
    size_t key_len;
    const char *label;  /* NULL: none (hidden fields) */
    const char *format; /* the front-end's format name ("string", "bytes", ...), or JSON text
                           starting with '{' (a table); NULL: none */
    unsigned flags;
};
#define MARKER_FIELD(k, l, f, fl) {(k), sizeof(k) - 1, (l), (f), (fl)}

struct marker_type {
    const char *name; /* the schema's name, payloads' "type" */
    const char *tooltip_label, *table_label, *chart_label; /* NULL: none */
    const char *display;                                   /* JSON array text */
    const char *color_field;                               /* NULL: none */
    const char *description;                               /* NULL: none */
    const struct marker_field *fields;
    size_t nfields;
    const char *graphs; /* JSON array text of the marker graph (a track), NULL: none */
};

/* Index of key[0..len) among t's fields, or -1. */
int marker_type_field(const struct marker_type *t, const char *key, size_t len);

/* The shared types: Text ("text") for intervals described by a text (suites, groups, marks the
 * command records), and Warning ("message", "color") for what a profile must say about itself. */
extern const struct marker_type marker_text_type;
enum { TEXT_TEXT };
extern const struct marker_type marker_warning_type;
enum { WARNING_MESSAGE, WARNING_COLOR };

/* ---- building a payload ------------------------------------------------------------------- */

/* A payload under construction in w, of type t: mpay_begin resets w and writes {"type":NAME;
 * each mpay_* writes one field by its index (an index out of range is a bug: the payload is
 * marked failed); mpay_end closes the object. Then w->buf/w->len is the payload (check
 * jsonw_failed). For values the calls below do not cover (arrays), mpay_key writes the key and
 * the caller writes one value with jsonw. */
struct mpay {
    struct jsonw *w;
    const struct marker_type *t;
};
void mpay_begin(struct mpay *p, struct jsonw *w, const struct marker_type *t);
void mpay_key(struct mpay *p, unsigned field);
void mpay_str(struct mpay *p, unsigned field, const char *s);
void mpay_strn(struct mpay *p, unsigned field, const char *s, size_t n);
void mpay_int(struct mpay *p, unsigned field, int64_t v);
void mpay_uint(struct mpay *p, unsigned field, uint64_t v);
void mpay_double(struct mpay *p, unsigned field, double v, int decimals);
void mpay_end(struct mpay *p);

/* A Text payload in w. */
void marker_text_payload(struct jsonw *w, const char *text, size_t len);

/* ---- counters ----------------------------------------------------------------------------- */

enum marker_counter_kind {
    MCOUNT_AMOUNT, /* the field is an amount over the marker's interval (CPU ms, bytes): a rate */
    MCOUNT_LEVEL,  /* the field is a level at the marker's end (bytes resident): drawn as is */
    MCOUNT_SHARE,  /* the field is a share (0..1) of the marker's interval: a rate in percent */
};

struct marker_counter {
    const char *name;        /* the counter's name */
    const char *category;    /* its category ("CPU", "Memory") */
    const char *description;
    const char *marker;      /* the name of the markers it is read from */
    const struct marker_type *type;
    unsigned field;          /* their numeric field */
    enum marker_counter_kind kind;
    const char *display;     /* JSON object text: the front-end's display of the counter (graph
                                type, unit, colour, label, tooltip rows) */
};

/* The counter's definition line, {"type":"counter",...}, in w (reset first). profile.h reads it. */
void marker_counter_line(struct jsonw *w, const struct marker_counter *c);

#endif

/* markers.h — how every producer of profile markers (sampler, test-log parsers, the supervisor's
 * own events, records from the command) hands them on, without knowing where they go.
 *
 * A marker is: a name, a start time and an optional end time (monotonic nanoseconds, see util.h),
 * a category (0 Other, 1 Phases, 2 Tasks — the profile's meta.categories), and a payload that is
 * a complete compact JSON object whose first key is "type" (the marker schema's name).
 * profile-format.md §5 fixes names and payloads; marker_schemas_json() lists the schemas.
 *
 * The sink decides what happens: the stream module writes one JSONL line per marker; unit tests
 * capture them in memory. A sink must accept any marker at any time, and must not call back into
 * the producer.
 *
 * Besides markers, producers may record *state lines*: a JSON object whose "type" is not "meta",
 * "thread" or "marker" (e.g. {"type":"open",...} for a test that started and has not ended).
 * Readers of the stream ignore unknown types; recovery (profile.h) uses them to close what a
 * killed run left open. The line passed must be a complete compact JSON object without newline.
 *
 * A state line that a later one undoes (a test's open line, which its close line ends) may be
 * recorded with marker_state_open: a sink that holds lines before writing them returns a handle,
 * and marker_state_retract(handle) then takes the line back if it has not been written yet, in
 * which case the producer leaves out its closing line too. A dense test log (tests that start and
 * end within one chunk of output) then costs the stream no open/close pair per test: on disk, at
 * every moment, the stream still says what is open.
 */
#ifndef RESMON_MARKERS_H
#define RESMON_MARKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* end_ns value of an instant marker (profile: endTime null, phase 0). */
#define MARKER_INSTANT UINT64_MAX

enum marker_category {
    CAT_OTHER = 0,
    CAT_PHASES = 1,
    CAT_TASKS = 2,
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

/* The meta.markerSchema array (compact JSON text, static storage): the upstream schemas verbatim
 * plus resmon-run's own (TreeCPU, TreeMem, TreeIO, TreeCount, Process with exit/cpuTime/maxRSS,
 * Test with cpuTime/maxRSS, Timeout, Command, ...). */
const char *marker_schemas_json(void);

#endif

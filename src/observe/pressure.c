/* pressure.c — see pressure.h. */
#include "observe/pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "observe/procfs.h"

enum { PR_CPU_SOME, PR_MEM_SOME, PR_MEM_FULL, PR_IO_SOME, PR_IO_FULL, PR_MEM_AVG60 };
static const struct marker_field pressure_fields[] = {
    [PR_CPU_SOME] = MARKER_FIELD("cpuSome", "Stalled on CPU", "duration", MF_OPTIONAL),
    [PR_MEM_SOME] = MARKER_FIELD("memorySome", "Stalled on memory (some tasks)", "duration", MF_OPTIONAL),
    [PR_MEM_FULL] = MARKER_FIELD("memoryFull", "Stalled on memory (all tasks)", "duration", MF_OPTIONAL),
    [PR_IO_SOME] = MARKER_FIELD("ioSome", "Stalled on IO (some tasks)", "duration", MF_OPTIONAL),
    [PR_IO_FULL] = MARKER_FIELD("ioFull", "Stalled on IO (all tasks)", "duration", MF_OPTIONAL),
    [PR_MEM_AVG60] = MARKER_FIELD("memoryAvg60", "Memory stall, last minute", "percentage", MF_OPTIONAL),
};
const struct marker_type pressure_type = {
    .name = "Pressure",
    .tooltip_label = "{marker.name}",
    .display = "[]",
    .description = "Time tasks waited for a CPU, memory or IO in the sample's interval (pressure stall "
                   "information)",
    .fields = pressure_fields,
    .nfields = ARRAY_SIZE(pressure_fields),
};

/* One counter per resource and scope, each the "some" figure as a share of the interval. */
#define PRESSURE_COUNTER(id, cname, label, cat, mname, fld, colour, weight, what)                          \
    static const struct marker_counter id = {                                                                \
        .name = cname, .category = cat,                                                                      \
        .description = "Share of the time at least one task " what " waited for " cat,                      \
        .marker = mname, .type = &pressure_type, .field = fld, .kind = MCOUNT_AMOUNT,                        \
        .display = "{\"graphType\":\"line-rate\",\"unit\":\"percent\",\"color\":\"" colour "\","           \
                   "\"markerSchemaLocation\":null,\"sortWeight\":" #weight ",\"label\":\"" label "\","       \
                   "\"tooltipRows\":[{\"type\":\"value\",\"source\":\"rate\",\"format\":{\"unit\":\"percent\"}," \
                   "\"label\":\"of the time a task waited\"}]}",                                          \
    }
PRESSURE_COUNTER(cpu_counter, "CPU Pressure", "Machine CPU Pressure", "CPU", "Pressure", PR_CPU_SOME, "red", 107,
                 "of the machine");
PRESSURE_COUNTER(mem_counter, "Memory Pressure", "Machine Memory Pressure", "Memory", "Pressure", PR_MEM_SOME, "red",
                 108, "of the machine");
PRESSURE_COUNTER(io_counter, "IO Pressure", "Machine IO Pressure", "IO", "Pressure", PR_IO_SOME, "red", 109,
                 "of the machine");
PRESSURE_COUNTER(tree_cpu_counter, "Tree CPU Pressure", "Tree CPU Pressure", "CPU", "Tree Pressure", PR_CPU_SOME,
                 "magenta", 104, "of the tree");
PRESSURE_COUNTER(tree_mem_counter, "Tree Memory Pressure", "Tree Memory Pressure", "Memory", "Tree Pressure",
                 PR_MEM_SOME, "magenta", 105, "of the tree");
PRESSURE_COUNTER(tree_io_counter, "Tree IO Pressure", "Tree IO Pressure", "IO", "Tree Pressure", PR_IO_SOME, "magenta",
                 106, "of the tree");

const struct marker_counter *const *pressure_counters(size_t *ret_n)
{
    static const struct marker_counter *const all[] = {&cpu_counter,      &mem_counter,      &io_counter,
                                                       &tree_cpu_counter, &tree_mem_counter, &tree_io_counter};
    *ret_n = ARRAY_SIZE(all);
    return all;
}

enum { RES_CPU, RES_MEM, RES_IO, RES_COUNT };
static const char *const res_name[RES_COUNT] = {"cpu", "memory", "io"};

/* One scope: the machine or the tree. */
struct scope {
    int fd[RES_COUNT];
    struct procfs_psi last[RES_COUNT];
    bool have[RES_COUNT];
};

struct pressure {
    const struct marker_sink *sink;
    struct scope scope[2]; /* 0 machine, 1 tree */
    bool tree;
    bool started; /* the baseline was read */
    bool emitted; /* an interval was read after it */
    uint64_t last_ns;
    bool warned; /* in a memory-pressure episode (the warning was given) */
    struct pressure_worst worst;
    struct jsonw w;
    char buf[512];
};

static void scope_open(struct scope *sc, int dirfd, bool cgroup)
{
    for (int r = 0; r < RES_COUNT; r++) {
        char name[32];
        snprintf(name, sizeof name, cgroup ? "%s.pressure" : "pressure/%s", res_name[r]);
        sc->fd[r] = dirfd >= 0 ? openat(dirfd, name, O_RDONLY | O_CLOEXEC) : -1;
    }
}

static bool scope_any(const struct scope *sc)
{
    for (int r = 0; r < RES_COUNT; r++)
        if (sc->fd[r] >= 0)
            return true;
    return false;
}

static void scope_close(struct scope *sc)
{
    for (int r = 0; r < RES_COUNT; r++)
        closep(&sc->fd[r]);
}

int pressure_new(int proc_fd, int cg_dirfd, const struct marker_sink *sink, struct pressure **ret)
{
    *ret = NULL;
    struct pressure *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->sink = sink;
    jsonw_init(&p->w);
    scope_open(&p->scope[0], proc_fd, false);
    scope_open(&p->scope[1], cg_dirfd, true);
    p->tree = scope_any(&p->scope[1]);
    if (!scope_any(&p->scope[0]) && !p->tree) {
        pressure_free(p);
        return 0;
    }
    const struct marker_counter *mine[6];
    size_t n = 0;
    if (p->scope[0].fd[RES_CPU] >= 0)
        mine[n++] = &cpu_counter;
    if (p->scope[0].fd[RES_MEM] >= 0)
        mine[n++] = &mem_counter;
    if (p->scope[0].fd[RES_IO] >= 0)
        mine[n++] = &io_counter;
    if (p->scope[1].fd[RES_CPU] >= 0)
        mine[n++] = &tree_cpu_counter;
    if (p->scope[1].fd[RES_MEM] >= 0)
        mine[n++] = &tree_mem_counter;
    if (p->scope[1].fd[RES_IO] >= 0)
        mine[n++] = &tree_io_counter;
    for (size_t i = 0; i < n; i++) {
        marker_counter_line(&p->w, mine[i]);
        if (!jsonw_failed(&p->w))
            marker_state(sink, p->w.buf, p->w.len);
    }
    *ret = p;
    return 0;
}

void pressure_free(struct pressure *p)
{
    if (!p)
        return;
    scope_close(&p->scope[0]);
    scope_close(&p->scope[1]);
    jsonw_release(&p->w);
    free(p);
}

unsigned pressure_files(const struct pressure *p)
{
    unsigned n = 0;
    for (int s = 0; p && s < 2; s++)
        for (int r = 0; r < RES_COUNT; r++)
            n += p->scope[s].fd[r] >= 0;
    return n;
}

/* Stalled ms between two readings of a cumulative total (µs); a counter that went back (a cgroup
 * recreated) gives 0. */
static double stalled_ms(uint64_t now_us, uint64_t was_us)
{
    return now_us > was_us ? (double)(now_us - was_us) / 1e3 : 0.0;
}

/* Read one scope; emit its marker (after the baseline). */
static void scope_sample(struct pressure *p, int s, uint64_t start_ns, uint64_t end_ns)
{
    struct scope *sc = &p->scope[s];
    struct procfs_psi now[RES_COUNT];
    bool have[RES_COUNT] = {false};
    for (int r = 0; r < RES_COUNT; r++) {
        if (sc->fd[r] < 0)
            continue;
        ssize_t n = pread(sc->fd[r], p->buf, sizeof p->buf - 1, 0);
        have[r] = n > 0 && procfs_parse_psi(p->buf, (size_t)n, &now[r]) == 0;
    }
    if (p->started) {
        struct mpay mp;
        mpay_begin(&mp, &p->w, &pressure_type);
        bool any = false;
        if (have[RES_CPU] && sc->have[RES_CPU]) {
            mpay_double(&mp, PR_CPU_SOME, stalled_ms(now[RES_CPU].some.total_us, sc->last[RES_CPU].some.total_us), 3);
            any = true;
        }
        if (have[RES_MEM] && sc->have[RES_MEM]) {
            mpay_double(&mp, PR_MEM_SOME, stalled_ms(now[RES_MEM].some.total_us, sc->last[RES_MEM].some.total_us), 3);
            if (now[RES_MEM].have_full)
                mpay_double(&mp, PR_MEM_FULL,
                            stalled_ms(now[RES_MEM].full.total_us, sc->last[RES_MEM].full.total_us), 3);
            mpay_double(&mp, PR_MEM_AVG60, now[RES_MEM].some.avg60 / 100.0, 4);
            any = true;
        }
        if (have[RES_IO] && sc->have[RES_IO]) {
            mpay_double(&mp, PR_IO_SOME, stalled_ms(now[RES_IO].some.total_us, sc->last[RES_IO].some.total_us), 3);
            if (now[RES_IO].have_full)
                mpay_double(&mp, PR_IO_FULL, stalled_ms(now[RES_IO].full.total_us, sc->last[RES_IO].full.total_us), 3);
            any = true;
        }
        mpay_end(&mp);
        if (any && !jsonw_failed(&p->w))
            marker_emit(p->sink, s ? "Tree Pressure" : "Pressure", start_ns, end_ns, CAT_OTHER, p->w.buf, p->w.len);
    }
    for (int r = 0; r < RES_COUNT; r++) {
        sc->have[r] = have[r];
        if (have[r])
            sc->last[r] = now[r];
    }
}

/* The warning: when memory "some" avg60 of the scope that speaks for the tree reaches the
 * threshold, once per episode (an episode ends when it falls below half of it). */
static void check_memory(struct pressure *p, uint64_t end_ns)
{
    int s = p->tree && p->scope[1].have[RES_MEM] ? 1 : 0;
    if (!p->scope[s].have[RES_MEM])
        return;
    double avg60 = p->scope[s].last[RES_MEM].some.avg60;
    if (!p->worst.known || avg60 > p->worst.avg60)
        p->worst = (struct pressure_worst){.known = true, .tree = s == 1, .avg60 = avg60, .at_ns = end_ns};
    if (p->warned && avg60 < PRESSURE_WARN_PCT / 2)
        p->warned = false;
    if (p->warned || avg60 < PRESSURE_WARN_PCT)
        return;
    p->warned = true;
    char msg[128];
    snprintf(msg, sizeof msg, "memory pressure: %.0f%% of the last minute stalled (%s)", avg60,
             s ? "the tree" : "the machine");
    struct mpay mp;
    mpay_begin(&mp, &p->w, &marker_warning_type);
    mpay_str(&mp, WARNING_MESSAGE, msg);
    mpay_str(&mp, WARNING_COLOR, "orange");
    mpay_end(&mp);
    if (!jsonw_failed(&p->w))
        marker_emit(p->sink, "memory pressure", end_ns, MARKER_INSTANT, CAT_OTHER, p->w.buf, p->w.len);
}

void pressure_sample(struct pressure *p, uint64_t now_ns, bool force)
{
    /* The first interval is read at the first sample whatever its length: a short run, or a
     * profile written at an early stop, has the figures too. */
    if (!p || (p->emitted && !force && now_ns - p->last_ns < PRESSURE_MIN_INTERVAL))
        return;
    if (p->started && now_ns <= p->last_ns)
        return;
    scope_sample(p, 0, p->last_ns, now_ns);
    if (p->tree)
        scope_sample(p, 1, p->last_ns, now_ns);
    check_memory(p, now_ns);
    p->emitted = p->started;
    p->started = true;
    p->last_ns = now_ns;
}

void pressure_worst_memory(const struct pressure *p, struct pressure_worst *ret)
{
    *ret = p ? p->worst : (struct pressure_worst){0};
}

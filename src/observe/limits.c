/* limits.c — see limits.h. */
#include "observe/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/log.h"
#include "base/sanitize.h"
#include "base/util.h"
#include "observe/sampler.h"

enum { OOM_PID, OOM_CMD, OOM_RSS, OOM_MAXRSS, OOM_TEST, OOM_COLOR };
static const struct marker_field oom_fields[] = {
    [OOM_PID] = MARKER_FIELD("pid", "Process ID", "pid", 0),
    [OOM_CMD] = MARKER_FIELD("cmd", "Command line", "string", 0),
    [OOM_RSS] = MARKER_FIELD("rss", "Resident at the last sample", "bytes", MF_OPTIONAL),
    [OOM_MAXRSS] = MARKER_FIELD("maxRSS", "Peak RSS", "bytes", MF_OPTIONAL),
    [OOM_TEST] = MARKER_FIELD("test", "Test running", "string", MF_OPTIONAL),
    [OOM_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type limits_oom_type = {
    .name = "OomKill",
    .tooltip_label = "OOM kill: {marker.data.cmd}",
    .table_label = "OOM kill: {marker.data.cmd} ({marker.data.pid})",
    .chart_label = "OOM kill: {marker.data.cmd}",
    .display = "[\"marker-chart\",\"marker-table\",\"timeline-overview\"]",
    .description = "A process of the tree the kernel's OOM killer killed",
    .color_field = "color",
    .fields = oom_fields,
    .nfields = ARRAY_SIZE(oom_fields),
};

const char *limit_name(enum limit_kind k)
{
    switch (k) {
    case LIMIT_MEMORY: return "memory";
    case LIMIT_CPU: return "cpu";
    case LIMIT_TASKS: return "tasks";
    default: return "none";
    }
}

#define PENDING_MAX 16
#define PENDING_NS (2 * NSEC_PER_SEC)
#define REBASE_NS (10 * NSEC_PER_SEC)

struct limits {
    struct limits_config cfg;
    struct contain *contain;
    unsigned by_kernel; /* CONTAIN_LIMIT_* */
    const char *how;
    uint64_t oom_base, refused_base, high_base; /* the run's cgroup counters at the start */
    struct sampler_killed victim; /* the OOM killer's first victim in the tree (pid 0: none seen) */
    /* OOM attribution */
    bool cg_oom;              /* the run's memory cgroup counts its OOM kills */
    uint64_t oom_seen;        /* the count last read */
    uint64_t credit;          /* rises not yet matched with a death */
    uint64_t credit_ns;       /* when the last rise was seen */
    uint64_t vm_read_ns;      /* when /proc/vmstat was last read */
    int vmstat_fd;
    struct pending {
        struct sampler_killed k;
        uint64_t noted_ns;
    } pending[PENDING_MAX];
    size_t n_pending;
};

/* The OOM kill count of the cgroup resmon-run started in, or the machine's (/proc/vmstat
 * oom_kill); false when unknown (kernels before 4.13). */
static bool vmstat_oom(struct limits *l, uint64_t *ret)
{
    char buf[16384];
    if (l->vmstat_fd < 0)
        return false;
    ssize_t n = pread(l->vmstat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    for (char *p = buf; p && *p;) {
        if (strncmp(p, "oom_kill ", 9) == 0) {
            *ret = strtoull(p + 9, NULL, 10);
            return true;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return false;
}

/* The OOM kill count the run can see: its memory cgroup's, else the machine's. */
static bool oom_count(struct limits *l, uint64_t now_ns, uint64_t *ret)
{
    if (l->cg_oom) {
        struct contain_events ev;
        contain_events(l->contain, &ev);
        *ret = ev.oom_kills;
        return ev.have_oom;
    }
    l->vm_read_ns = now_ns;
    return vmstat_oom(l, ret);
}

int limits_new(const struct limits_config *cfg, struct contain *c, struct limits **ret)
{
    struct limits *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->cfg = *cfg;
    l->contain = c;
    l->vmstat_fd = -1;
    if (c && (cfg->memory || cfg->tasks)) {
        int r = contain_set_limits(c, cfg->memory, cfg->tasks, cfg->stop_first, &l->how);
        l->by_kernel = r > 0 ? (unsigned)r : 0;
    }
    struct contain_events ev = {0};
    if (c)
        contain_events(c, &ev);
    l->cg_oom = ev.have_oom;
    l->oom_base = ev.oom_kills;
    l->refused_base = ev.tasks_refused;
    l->high_base = ev.high_events;
    /* Without the run's own count: the cgroup it started in where that counts (other jobs' kills
     * are not in it), else the machine's. Both say "oom_kill N". */
    char home[4096];
    if (!l->cg_oom && !cfg->vmstat && c && contain_home_oom_file(home, sizeof home) == 0)
        l->vmstat_fd = open(home, O_RDONLY | O_CLOEXEC);
    if (!l->cg_oom && l->vmstat_fd < 0)
        l->vmstat_fd = open(cfg->vmstat ? cfg->vmstat : "/proc/vmstat", O_RDONLY | O_CLOEXEC);
    uint64_t v = 0;
    if (oom_count(l, now_ns(), &v))
        l->oom_seen = v;
    *ret = l;
    return 0;
}

void limits_free(struct limits *l)
{
    if (!l)
        return;
    closep(&l->vmstat_fd);
    free(l);
}

unsigned limits_by_kernel(const struct limits *l) { return l ? l->by_kernel : 0; }

static void fmt_size(char *out, size_t size, uint64_t v)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double d = (double)v;
    size_t u = 0;
    while (d >= 1024 && u + 1 < ARRAY_SIZE(unit))
        d /= 1024, u++;
    if (u == 0 || d == (double)(uint64_t)d)
        snprintf(out, size, "%.0f %s", d, unit[u]);
    else
        snprintf(out, size, "%.1f %s", d, unit[u]);
}

/* v in binary units, then as the front-end's memory graphs show it (decimal kB/MB/GB, three
 * significant digits): "32 MiB (33.6 MB)", so the limit reads against the track. */
static void fmt_size_graph(char *out, size_t size, uint64_t v)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB"};
    char bin[32];
    fmt_size(bin, sizeof bin, v);
    double d = (double)v;
    size_t u = 0;
    if (d >= 1e4)
        while (d >= 1000 && u + 1 < ARRAY_SIZE(unit))
            d /= 1000, u++;
    int frac = d >= 100 || u == 0 ? 0 : d >= 10 ? 1 : 2;
    snprintf(out, size, "%s (%.*f %s)", bin, frac, d, unit[u]);
}

static void fmt_secs(char *out, size_t size, uint64_t ns)
{
    snprintf(out, size, "%.3g s", (double)ns / 1e9);
}

void limits_describe(const struct limits *l, char *buf, size_t size)
{
    char a[32];
    size_t n = 0;
    buf[0] = '\0';
#define ADD(...)                                                                                             \
    do {                                                                                                     \
        int k_ = snprintf(buf + n, size > n ? size - n : 0, __VA_ARGS__);                                  \
        if (k_ > 0)                                                                                          \
            n = MIN(size ? size - 1 : 0, n + (size_t)k_);                                                    \
    } while (0)
    if (l->cfg.memory) {
        fmt_size(a, sizeof a, l->cfg.memory);
        if (l->by_kernel & CONTAIN_LIMIT_MEMORY)
            ADD("memory %s: enforced by the kernel (%s; no swap past it%s)", a, l->how ? l->how : "cgroup",
                l->by_kernel & CONTAIN_LIMIT_MEMORY_HIGH   ? "; the run stopped at its high mark, an eighth below"
                : l->by_kernel & CONTAIN_LIMIT_MEMORY_HOLD ? "; the tree held at it, then the run stopped"
                                                           : "");
        else
            ADD("memory %s: the tree's summed RSS checked at each sample (no memory controller here)", a);
    }
    if (l->cfg.cpu_ns) {
        fmt_secs(a, sizeof a, l->cfg.cpu_ns);
        ADD("%scpu %s: the tree's CPU time checked at each sample and on a timer", n ? "; " : "", a);
    }
    if (l->cfg.tasks) {
        if (l->by_kernel & CONTAIN_LIMIT_TASKS)
            ADD("%stasks %llu: enforced by the kernel (%s)", n ? "; " : "", (unsigned long long)l->cfg.tasks,
                l->how ? l->how : "cgroup");
        else
            ADD("%stasks %llu: processes and threads counted at each sample (no pids controller here; "
                "RLIMIT_NPROC would count the user's other processes too)",
                n ? "; " : "", (unsigned long long)l->cfg.tasks);
    }
#undef ADD
}

void limits_figure(const struct limits *l, enum limit_kind k, char *buf, size_t size)
{
    buf[0] = '\0';
    if (!l)
        return;
    if (k == LIMIT_MEMORY && l->cfg.memory)
        fmt_size_graph(buf, size, l->cfg.memory);
    else if (k == LIMIT_CPU && l->cfg.cpu_ns)
        fmt_secs(buf, size, l->cfg.cpu_ns);
    else if (k == LIMIT_TASKS && l->cfg.tasks)
        snprintf(buf, size, "%llu tasks", (unsigned long long)l->cfg.tasks);
}

enum limit_kind limits_check(struct limits *l, const struct limits_reading *r, char *text, size_t size)
{
    char a[64], b[64];
    if (!l)
        return LIMIT_NONE;
    struct contain_events ev = {0};
    if (l->by_kernel)
        contain_events(l->contain, &ev);
    if (l->cfg.memory) {
        fmt_size_graph(a, sizeof a, l->cfg.memory);
        if (l->by_kernel & CONTAIN_LIMIT_MEMORY) {
            if (ev.have_oom && ev.oom_kills > l->oom_base) {
                if (l->victim.pid)
                    snprintf(text, size, "the kernel's OOM killer killed in the tree at the limit of %s: process %d, %s",
                             a, (int)l->victim.pid, l->victim.cmd);
                else
                    snprintf(text, size, "the kernel's OOM killer killed in the tree at the limit of %s", a);
                return LIMIT_MEMORY;
            }
            if ((l->by_kernel & CONTAIN_LIMIT_MEMORY_HOLD) && ev.under_oom) {
                snprintf(text, size, "the tree's memory reached the limit of %s, held there by the kernel: "
                         "stopped before any OOM kill", a);
                return LIMIT_MEMORY;
            }
            /* past the high mark: stopped while the tree is alive, before the OOM killer */
            if ((l->by_kernel & CONTAIN_LIMIT_MEMORY_HIGH) && ev.have_high && ev.high_events > l->high_base) {
                fmt_size_graph(b, sizeof b, l->cfg.memory - MAX(l->cfg.memory / 8, (uint64_t)1 << 20));
                snprintf(text, size, "the tree's memory passed %s, near the limit of %s: stopped before the "
                         "kernel's OOM killer", b, a);
                return LIMIT_MEMORY;
            }
        } else if (r->rss_known && r->rss > l->cfg.memory) {
            fmt_size_graph(b, sizeof b, r->rss);
            snprintf(text, size, "the tree's RSS reached %s, past the limit of %s", b, a);
            return LIMIT_MEMORY;
        }
    }
    if (l->cfg.cpu_ns && r->cpu_ns >= l->cfg.cpu_ns) {
        fmt_secs(a, sizeof a, r->cpu_ns);
        fmt_secs(b, sizeof b, l->cfg.cpu_ns);
        snprintf(text, size, "the tree used %s of CPU time, the limit is %s", a, b);
        return LIMIT_CPU;
    }
    if (l->cfg.tasks) {
        if (l->by_kernel & CONTAIN_LIMIT_TASKS) {
            if (ev.have_tasks && ev.tasks_refused > l->refused_base) {
                snprintf(text, size, "a fork was refused at the limit of %llu tasks",
                         (unsigned long long)l->cfg.tasks);
                return LIMIT_TASKS;
            }
        } else if (r->count_known && r->tasks > l->cfg.tasks) {
            snprintf(text, size, "the tree had %llu processes and threads, the limit is %llu",
                     (unsigned long long)r->tasks, (unsigned long long)l->cfg.tasks);
            return LIMIT_TASKS;
        }
    }
    return LIMIT_NONE;
}

uint64_t limits_cpu_deadline(const struct limits *l, uint64_t now, uint64_t cpu_ns, unsigned ncpu)
{
    if (!l || !l->cfg.cpu_ns)
        return UINT64_MAX;
    uint64_t left = l->cfg.cpu_ns > cpu_ns ? l->cfg.cpu_ns - cpu_ns : 0;
    uint64_t wait = left / (ncpu ? ncpu : 1);
    return sat_add_u64(now, MAX(wait, 10 * NSEC_PER_MSEC));
}

void limits_note_death(struct limits *l, const struct sampler_killed *k, bool we_killed)
{
    if (!l || we_killed)
        return;
    if (l->n_pending == PENDING_MAX) {
        memmove(&l->pending[0], &l->pending[1], (PENDING_MAX - 1) * sizeof l->pending[0]);
        l->n_pending--;
    }
    l->pending[l->n_pending++] = (struct pending){.k = *k, .noted_ns = now_ns()};
}

size_t limits_oom_take(struct limits *l, uint64_t now, struct sampler_killed *out, size_t max)
{
    if (!l)
        return 0;
    /* Without deaths to explain, only keep the machine's baseline fresh (cheaply). */
    bool read = l->n_pending || l->cg_oom || now - l->vm_read_ns >= REBASE_NS;
    uint64_t v;
    if (read && oom_count(l, now, &v)) {
        if (v > l->oom_seen && l->n_pending) {
            l->credit += v - l->oom_seen;
            l->credit_ns = now;
        } else if (v > l->oom_seen && l->cg_oom) {
            /* the run's own count: the victim's exit is still to come */
            l->credit += v - l->oom_seen;
            l->credit_ns = now;
        }
        l->oom_seen = v;
    }
    /* A rise no death came to claim is someone else's (or a victim we never saw end). */
    if (l->credit && now - l->credit_ns > PENDING_NS && !l->n_pending)
        l->credit = 0;
    size_t n = 0, keep = 0;
    for (size_t i = 0; i < l->n_pending; i++) {
        struct pending *p = &l->pending[i];
        if (l->credit && n < max) {
            out[n++] = p->k;
            l->credit--;
            if (!l->victim.pid)
                l->victim = p->k;
        } else if (now - p->noted_ns <= PENDING_NS)
            l->pending[keep++] = *p;
    }
    l->n_pending = keep;
    return n;
}

void limits_oom_payload(struct jsonw *w, const struct sampler_killed *k, const char *test)
{
    struct mpay p;
    mpay_begin(&p, w, &limits_oom_type);
    mpay_int(&p, OOM_PID, k->pid);
    mpay_str(&p, OOM_CMD, k->cmd);
    if (k->rss)
        mpay_uint(&p, OOM_RSS, k->rss);
    if (k->max_rss)
        mpay_uint(&p, OOM_MAXRSS, k->max_rss);
    if (test)
        mpay_str(&p, OOM_TEST, test);
    mpay_str(&p, OOM_COLOR, "red");
    mpay_end(&p);
}

enum limit_kind limits_check_tree(struct limits *l, const struct sampler *s, uint64_t cpu_ns, char *text,
                                  size_t size)
{
    struct sampler_totals t;
    sampler_get_totals(s, &t);
    struct limits_reading rd = {
        .cpu_ns = cpu_ns,
        .rss_known = t.rss_known,
        .rss = sampler_tree_rss(s),
        .count_known = t.count_known,
        .tasks = t.live_processes + t.live_threads,
    };
    /* threads include each process's main thread: the tasks the kernel counts */
    if (t.count_known)
        rd.tasks = t.live_threads > t.live_processes ? t.live_threads : t.live_processes;
    return limits_check(l, &rd, text, size);
}

size_t limits_oom_kills(struct limits *l, struct sampler *s, bool we_killed, bool settle, struct sampler_killed *out,
                        size_t max)
{
    size_t n = sampler_take_killed(s, out, max);
    for (size_t i = 0; i < n; i++)
        limits_note_death(l, &out[i], we_killed);
    if (!n && !settle)
        return 0;
    return limits_oom_take(l, now_ns(), out, max);
}

void limits_say_oom(const struct marker_sink *sink, const struct sampler_killed *k, const char *test)
{
    char cmd[sizeof k->cmd], during[160]; /* the tree's text, for a terminal (sanitize.h) */
    sanitize_into(SANITIZE_TERMINAL, cmd, sizeof cmd, k->cmd, strlen(k->cmd));
    sanitize_into(SANITIZE_TERMINAL, during, sizeof during, test, test ? strlen(test) : 0);
    log_warn("the kernel's OOM killer killed process %d of the tree (%s)%s%s", (int)k->pid, cmd, test ? " during " : "",
             during);
    if (!sink)
        return;
    struct jsonw w;
    jsonw_init(&w);
    limits_oom_payload(&w, k, test);
    if (!jsonw_failed(&w))
        marker_emit(sink, "OOM kill", k->end_ns, MARKER_INSTANT, CAT_TASKS, w.buf, w.len);
    jsonw_release(&w);
}

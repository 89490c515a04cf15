/* stopdump.c — see stopdump.h. */
#include "observe/stopdump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/outfile.h"
#include "base/sanitize.h"
#include "base/util.h"

/* A JVM, which goes on running, is done once its output has been quiet this long (or, before it
 * printed anything, this long). */
#define RUNTIME_QUIET_NS (200 * NSEC_PER_MSEC)
#define RUNTIME_FIRST_NS (1000 * NSEC_PER_MSEC)
/* Without a pidfd a runtime's end is looked for this often. */
#define HOLD_FALLBACK (50 * NSEC_PER_MSEC)

static bool tree_member(void *ctx, pid_t pid)
{
    const struct stopdump_config *cfg = ctx;
    pid_t *pids = NULL;
    size_t n = 0;
    bool found = false;
    if (contain_members(cfg->contain, &pids, &n) == 0)
        for (size_t i = 0; i < n && !found; i++)
            found = pids[i] == pid;
    free(pids);
    return found;
}

/* ---- the text file --------------------------------------------------------------------------- */

static void put_jsonw(void *ctx, const char *p, size_t n)
{
    jsonw_append(ctx, p, n);
}

static int fill_dump(void *ctx, int fd)
{
    const struct jsonw *t = ctx;
    if (jsonw_failed(t))
        return -ENOMEM;
    /* command lines, thread names and runtimes' dumps are the command's bytes: safe to cat */
    struct jsonw safe;
    jsonw_init(&safe);
    sanitize(SANITIZE_TEXT_FILE, t->buf, t->len, put_jsonw, &safe);
    int r = jsonw_failed(&safe) ? -ENOMEM : write_all(fd, safe.buf, safe.len);
    jsonw_release(&safe);
    return r;
}

/* Written as the profile is (outfile.h): a FIFO, a link or someone else's file at the path is
 * refused at once, and what is there is replaced, never written into. */
static bool write_text(const struct forensics_report *rep, const char *path)
{
    struct jsonw text;
    jsonw_init(&text);
    forensics_text(rep, &text);
    int r = write_file_atomically(AT_FDCWD, path, fill_dump, &text, NULL);
    if (r < 0)
        log_msg("cannot write the dump '%s': %s", path, outfile_why(r, AT_FDCWD, path));
    jsonw_release(&text);
    return r == 0;
}

/* ---- a runtime's own dump -------------------------------------------------------------------- */

/* The runtime being dumped: rep.procs[proc], held, what the command printed since it was asked. */
struct stopdump_runtime {
    size_t proc;
    struct forensics_hold h;
    struct jsonw cap;
    size_t seen;     /* cap.len at the last step */
    uint64_t start;  /* when it was asked */
    uint64_t last;   /* when it last printed (or ended) */
    bool exited;
};

static const char go_tool_text[] = "not signalled: the go tool prints nothing of its own (it relays the signal to "
                                   "the test binary it runs, dumped on its own)";

/* Ask rep.procs[i]'s runtime for its own dump with sig: true when it is now the one dumped. */
static bool runtime_begin(struct stopdump *d, size_t i, int sig)
{
    struct forensics_process *p = &d->rep.procs[i];
    const struct stopdump_output *out = d->cfg.output;
    uint64_t start = now_ns();
    if (start >= d->deadline) {
        p->runtime_error = "left out: the budget ran out";
        return false;
    }
    struct forensics_config fcfg = {.is_member = tree_member, .ctx = &d->cfg};
    struct stopdump_runtime *r = calloc(1, sizeof *r);
    if (!r) {
        p->runtime_error = "left out: out of memory";
        return false;
    }
    if (forensics_hold(&fcfg, p->pid, p->starttime, &r->h) < 0) {
        p->runtime_error = "no longer a member of the tree";
        free(r);
        return false;
    }
    if (out)
        out->flush(out->ctx);
    if (forensics_hold_signal(&r->h, sig) < 0) {
        p->runtime_error = "could not be signalled";
        forensics_release(&r->h);
        free(r);
        return false;
    }
    r->proc = i;
    jsonw_init(&r->cap);
    r->start = r->last = start;
    d->cur = r;
    return true;
}

/* When the runtime being dumped is done: it exited (Go, Python) and the output is quiet, its
 * output is quiet (a JVM), or the budget ends. */
static uint64_t runtime_until(const struct stopdump *d)
{
    const struct stopdump_runtime *r = d->cur;
    uint64_t until = d->deadline;
    if (d->rep.procs[r->proc].runtime == FORENSICS_RT_JAVA)
        until = MIN(until, r->cap.len ? r->last + RUNTIME_QUIET_NS : r->start + RUNTIME_FIRST_NS);
    /* Once it has ended, what it printed may still be on its way through a parent that relays it
     * (the go tool prints its test binary's output after the binary exited): read on until the
     * output is quiet. */
    if (r->exited)
        until = MIN(until, r->last + RUNTIME_QUIET_NS);
    return until;
}

static void runtime_exited(struct stopdump_runtime *r)
{
    r->exited = true;
    r->last = MAX(r->last, now_ns());
}

/* The runtime being dumped is done, or the dump is cut short: keep what it printed. */
static void runtime_end(struct stopdump *d, bool cut_short)
{
    struct stopdump_runtime *r = d->cur;
    struct forensics_process *p = &d->rep.procs[r->proc];
    const struct stopdump_output *out = d->cfg.output;
    /* what it printed before it ended may still be in the pipes (not read when told to hurry) */
    if (r->exited && out && !cut_short)
        out->read_left(out->ctx, d->deadline);
    forensics_release(&r->h);
    if (!out || !out->interposed)
        p->runtime_error = "passed through, not kept (the output is not interposed: no profile, or --parse=none)";
    else if (cut_short && !r->exited)
        p->runtime_error = "cut short: the run was asked to stop at once";
    else if (!r->exited && p->runtime != FORENSICS_RT_JAVA)
        p->runtime_error = "had not finished within the budget";
    if (!jsonw_failed(&r->cap) && r->cap.len) {
        p->runtime_dump = r->cap.buf;
        p->runtime_dump_len = r->cap.len;
    } else
        jsonw_release(&r->cap);
    free(r);
    d->cur = NULL;
}

struct jsonw *stopdump_keep(struct stopdump *d)
{
    return d->cur ? &d->cur->cap : NULL;
}

int stopdump_events(const struct stopdump *d, struct pollfd *pfd)
{
    if (!d->cur || d->cur->exited || d->cur->h.pidfd < 0)
        return 0;
    pfd[0] = (struct pollfd){.fd = d->cur->h.pidfd, .events = POLLIN};
    return 1;
}

void stopdump_handle(struct stopdump *d, const struct pollfd *pfd, int n)
{
    if (n && d->cur && pfd[0].revents)
        runtime_exited(d->cur);
}

uint64_t stopdump_deadline(const struct stopdump *d)
{
    if (!d->cur)
        return NS_INFINITY;
    uint64_t until = runtime_until(d);
    /* without a pidfd its end is looked for at each wake-up (HOLD_FALLBACK at the latest) */
    if (d->cur->h.pidfd < 0 && !d->cur->exited)
        until = MIN(until, sat_add_u64(now_ns(), HOLD_FALLBACK));
    return until;
}

bool stopdump_step(struct stopdump *d)
{
    for (;;) {
        struct stopdump_runtime *r = d->cur;
        if (r) {
            if (!r->exited && r->h.pidfd < 0 && !forensics_hold_same(&r->h))
                runtime_exited(r);
            if (r->cap.len > r->seen) {
                r->seen = r->cap.len;
                r->last = now_ns();
            }
            if (now_ns() < runtime_until(d))
                return false;
            runtime_end(d, false);
        }
        if (d->next >= d->norder)
            return true;
        size_t i = d->order[d->next];
        int sig = d->sig[d->next++];
        if (sig)
            runtime_begin(d, i, sig);
        else
            d->rep.procs[i].runtime_error = go_tool_text;
    }
}

/* ---- the stream ------------------------------------------------------------------------------ */

/* A stack line per thread and a marker per process; a warning for what the budget cut off. */
static void to_stream(const struct stopdump_config *cfg, const struct forensics_report *rep)
{
    struct jsonw w;
    jsonw_init(&w);
    for (size_t i = 0; i < rep->nprocs; i++) {
        const struct forensics_process *p = &rep->procs[i];
        for (size_t j = 0; j < p->nthreads; j++) {
            if (!p->threads[j].nframes)
                continue; /* no stack: the marker and the text file say why */
            forensics_stack_line(&w, p, &p->threads[j], cfg->ms_of, cfg->ms_ctx);
            if (!jsonw_failed(&w))
                marker_state(cfg->sink, w.buf, w.len);
        }
        jsonw_reset(&w);
        forensics_dump_payload(&w, p);
        if (!jsonw_failed(&w))
            marker_emit(cfg->sink, "process dump", rep->start_ns, rep->end_ns, CAT_TASKS, w.buf, w.len);
    }
    if (rep->cut_off_processes || rep->cut_off_threads) {
        char msg[160];
        snprintf(msg, sizeof msg, "the dump's budget cut off the stacks of %zu process%s and %zu thread%s",
                 rep->cut_off_processes, rep->cut_off_processes == 1 ? "" : "es", rep->cut_off_threads,
                 rep->cut_off_threads == 1 ? "" : "s");
        struct mpay mp;
        mpay_begin(&mp, &w, &marker_warning_type);
        mpay_str(&mp, WARNING_MESSAGE, msg);
        mpay_str(&mp, WARNING_COLOR, "orange");
        mpay_end(&mp);
        if (!jsonw_failed(&w))
            marker_emit(cfg->sink, "dump cut off", rep->end_ns, MARKER_INSTANT, CAT_TASKS, w.buf, w.len);
    }
    jsonw_release(&w);
}

/* ---- the dump -------------------------------------------------------------------------------- */

/* How many of p's ancestors are in the report (the tree's members). */
static size_t depth_of(const struct forensics_report *rep, const struct forensics_process *p)
{
    size_t d = 0;
    for (pid_t up = p->ppid; d < rep->nprocs; d++) {
        size_t i = 0;
        while (i < rep->nprocs && rep->procs[i].pid != up)
            i++;
        if (i == rep->nprocs || up <= 0)
            break;
        up = rep->procs[i].ppid;
    }
    return d;
}

int stopdump_start(const struct stopdump_config *cfg, struct stopdump *d)
{
    pid_t *pids = NULL;
    size_t n = 0;
    if (contain_members(cfg->contain, &pids, &n) < 0 || !n) {
        free(pids);
        return 1;
    }
    /* the command first */
    for (size_t i = 1; i < n; i++)
        if (pids[i] == cfg->command) {
            pids[i] = pids[0];
            pids[0] = cfg->command;
        }
    *d = (struct stopdump){.cfg = *cfg};
    struct forensics_config fcfg = {.budget_ns = cfg->budget_ns, .is_member = tree_member, .ctx = &d->cfg};
    struct forensics_report *rep = &d->rep;
    int r = forensics_record(&fcfg, pids, n, rep);
    free(pids);
    if (r < 0) {
        log_errno(r, "cannot record what the tree was doing");
        return r;
    }
    /* After the stacks (a Go program exits once it has printed its goroutines): the runtimes
     * asked for, within what is left of the budget, the leaves of the tree first: a parent that
     * relays the signal (the go tool to its test binary) must not be the one that spends it. Each
     * one's runtime is known before any is signalled: a relaying parent may end with its child. */
    d->deadline = sat_add_u64(rep->start_ns, cfg->budget_ns);
    if (!cfg->runtimes)
        return 0;
    size_t *depth = calloc(rep->nprocs + 1, sizeof *depth), deepest = 0;
    int *sig = calloc(rep->nprocs + 1, sizeof *sig);
    d->order = calloc(rep->nprocs + 1, sizeof *d->order);
    d->sig = calloc(rep->nprocs + 1, sizeof *d->sig);
    for (size_t i = 0; depth && sig && d->order && d->sig && i < rep->nprocs; i++) {
        deepest = MAX(deepest, depth[i] = depth_of(rep, &rep->procs[i]));
        rep->procs[i].runtime = forensics_runtime_of(rep->procs[i].pid, cfg->runtimes, &sig[i]);
    }
    for (size_t dp = deepest + 1; depth && sig && d->order && d->sig && dp-- > 0;)
        for (size_t i = 0; i < rep->nprocs; i++)
            if (depth[i] == dp && rep->procs[i].runtime) {
                d->order[d->norder] = i;
                d->sig[d->norder++] = sig[i];
            }
    free(sig);
    free(depth);
    return 0;
}

void stopdump_finish(struct stopdump *d, bool cut_short)
{
    if (d->cur)
        runtime_end(d, cut_short);
    for (; d->next < d->norder; d->next++) {
        size_t i = d->order[d->next];
        d->rep.procs[i].runtime_error = d->sig[d->next] ? "left out: the dump was cut short" : go_tool_text;
    }
    const struct stopdump_config *cfg = &d->cfg;
    struct forensics_report *rep = &d->rep;
    rep->end_ns = now_ns();
    /* The test each process ran under: the innermost open one that had started when it did (its
     * start is in clock ticks, floored: a tick's grace). Copies: the ids are the log's. */
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t tick = hz > 0 ? NSEC_PER_SEC / (uint64_t)hz : 0;
    for (size_t i = 0; cfg->test_at && i < rep->nprocs; i++) {
        struct forensics_process *p = &rep->procs[i];
        const char *t = p->start_ns ? cfg->test_at(cfg->test_ctx, p->start_ns + tick) : NULL;
        p->test = t ? strdup(t) : NULL;
    }
    if (cfg->sink)
        to_stream(cfg, rep);
    if (cfg->text_path)
        d->text_written = write_text(rep, cfg->text_path);
}

void stopdump_free(struct stopdump *d)
{
    if (d->cur) {
        forensics_release(&d->cur->h);
        jsonw_release(&d->cur->cap);
        free(d->cur);
        d->cur = NULL;
    }
    free(d->order);
    free(d->sig);
    d->order = NULL;
    d->sig = NULL;
    for (size_t i = 0; i < d->rep.nprocs; i++)
        free((char *)d->rep.procs[i].test);
    forensics_report_free(&d->rep);
}

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

/* Ask p's runtime for its own dump with sig, and keep what the command prints meanwhile, until p
 * exits (Go, Python), its output is quiet (a JVM), or the deadline. */
static void runtime_dump(const struct stopdump_config *cfg, struct forensics_process *p, int sig, uint64_t deadline)
{
    const struct stopdump_output *out = cfg->output;
    uint64_t start = now_ns();
    if (start >= deadline) {
        p->runtime_error = "left out: the budget ran out";
        return;
    }
    struct forensics_config fcfg = {.is_member = tree_member, .ctx = (void *)cfg};
    struct forensics_hold h;
    if (forensics_hold(&fcfg, p->pid, p->starttime, &h) < 0) {
        p->runtime_error = "no longer a member of the tree";
        return;
    }
    if (out)
        out->flush(out->ctx);
    if (forensics_hold_signal(&h, sig) < 0) {
        p->runtime_error = "could not be signalled";
        forensics_release(&h);
        return;
    }
    struct jsonw cap;
    jsonw_init(&cap);
    bool exited = false;
    uint64_t last = start;
    for (;;) {
        uint64_t now = now_ns(), until = deadline;
        if (p->runtime == FORENSICS_RT_JAVA)
            until = MIN(until, cap.len ? last + RUNTIME_QUIET_NS : start + RUNTIME_FIRST_NS);
        /* Once it has ended, what it printed may still be on its way through a parent that
         * relays it (the go tool prints its test binary's output after the binary exited): read
         * on until the output is quiet. */
        if (exited)
            until = MIN(until, last + RUNTIME_QUIET_NS);
        if (now >= until)
            break;
        struct pollfd pfd[1 + STOPDUMP_OUTPUT_FDS];
        int n = 1;
        /* without a pidfd its end is looked for at each wake-up (HOLD_FALLBACK at the latest) */
        pfd[0] = (struct pollfd){.fd = exited ? -1 : h.pidfd, .events = POLLIN};
        if (h.pidfd < 0 && !exited)
            until = MIN(until, now + HOLD_FALLBACK);
        if (out)
            n += out->events(out->ctx, &pfd[1]);
        if (poll(pfd, (nfds_t)n, (int)((until - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC)) < 0 && errno != EINTR)
            break;
        if (!exited && (h.pidfd >= 0 ? pfd[0].revents != 0 : !forensics_hold_same(&h))) {
            exited = true;
            last = MAX(last, now_ns());
        }
        size_t before = cap.len;
        if (out)
            out->handle(out->ctx, &pfd[1], &cap);
        if (cap.len > before)
            last = now_ns();
    }
    /* what it printed before it ended may still be in the pipes */
    if (exited && out)
        out->read_left(out->ctx, &cap, deadline);
    forensics_release(&h);
    if (!out || !out->interposed)
        p->runtime_error = "passed through, not kept (the output is not interposed: no profile, or --parse=none)";
    else if (!exited && p->runtime != FORENSICS_RT_JAVA)
        p->runtime_error = "had not finished within the budget";
    if (!jsonw_failed(&cap) && cap.len) {
        p->runtime_dump = cap.buf;
        p->runtime_dump_len = cap.len;
    } else
        jsonw_release(&cap);
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
        snprintf(msg, sizeof msg, "the dump's budget cut off the stacks of %zu processes and %zu threads",
                 rep->cut_off_processes, rep->cut_off_threads);
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

int stopdump_run(const struct stopdump_config *cfg, struct stopdump *ret)
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
    struct forensics_config fcfg = {.budget_ns = cfg->budget_ns, .is_member = tree_member, .ctx = (void *)cfg};
    *ret = (struct stopdump){0};
    struct forensics_report *rep = &ret->rep;
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
    uint64_t deadline = sat_add_u64(rep->start_ns, cfg->budget_ns);
    size_t *depth = cfg->runtimes ? calloc(rep->nprocs + 1, sizeof *depth) : NULL, deepest = 0;
    int *sig = cfg->runtimes ? calloc(rep->nprocs + 1, sizeof *sig) : NULL;
    for (size_t i = 0; depth && sig && i < rep->nprocs; i++) {
        deepest = MAX(deepest, depth[i] = depth_of(rep, &rep->procs[i]));
        rep->procs[i].runtime = forensics_runtime_of(rep->procs[i].pid, cfg->runtimes, &sig[i]);
    }
    for (size_t d = deepest + 1; depth && sig && d-- > 0;)
        for (size_t i = 0; i < rep->nprocs; i++) {
            struct forensics_process *p = &rep->procs[i];
            if (depth[i] != d || !p->runtime)
                continue;
            if (sig[i])
                runtime_dump(cfg, p, sig[i], deadline);
            else
                p->runtime_error = "not signalled: the go tool prints nothing of its own (it relays the signal to "
                                   "the test binary it runs, dumped on its own)";
        }
    free(sig);
    free(depth);
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
        ret->text_written = write_text(rep, cfg->text_path);
    return 0;
}

void stopdump_free(struct stopdump *d)
{
    for (size_t i = 0; i < d->rep.nprocs; i++)
        free((char *)d->rep.procs[i].test);
    forensics_report_free(&d->rep);
}

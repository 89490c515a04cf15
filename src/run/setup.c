/* setup.c — setting a run up and taking it down (state.h): the reports, the signals, the
 * containment, the limits and the watchdog, the command's output and the stream, the sampler, the
 * parsers and the marker socket, in that order (each needs the ones before); then the command is
 * spawned, and what it needs of resmon-run from then on is locked down (sandbox.h).
 */
#include "run/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <termios.h>
#include <unistd.h>

#include "base/log.h"
#include "base/outfile.h"
#include "base/parse.h"
#include "base/util.h"
#include "observe/cpuprof.h"
#include "observe/forensics.h"
#include "observe/procfs.h"
#include "report/cimeta.h"
#include "report/ghactions.h"
#include "run/sandbox.h"
#include "run/spawn.h"

/* Lines longer than this reach the parsers as their first MAX_LINE bytes (pass-through is never
 * capped): mozlog suite_start lines of a few MiB exist, 4 MiB keeps them whole. */
#define MAX_LINE (4u << 20)

/* The processes a test leaves behind (testlog_probe.leaked; leaks.h). */
static size_t probe_leaked(void *ctx, const char *test, uint64_t since_ns, char *cmds, size_t cap)
{
    struct sv *sv = ctx;
    return leaks_probe(&sv->leaks, sv->sampler, sv->pid, test, since_ns, cmds, cap);
}

/* The tree's RSS at a test's start and end: read at most every 10 ms (a dense log starts and
 * ends thousands of tests a second), once per chunk of output. */
#define RSS_MAX_AGE (10 * NSEC_PER_MSEC)
static uint64_t probe_tree_rss(void *ctx)
{
    struct sv *sv = ctx;
    if (!sv->tree_rss_valid) {
        sv->tree_rss = sampler_tree_rss_now(sv->sampler, now_ns(), RSS_MAX_AGE);
        sv->tree_rss_valid = true;
    }
    return sv->tree_rss;
}

/* The tree's CPU time for test and phase markers. Every line of one chunk of output arrived at
 * the same instant (its read), so one reading per chunk serves them all: a chunk that starts and
 * ends a thousand tests costs one cpu.stat read, not two thousand. */
static uint64_t probe_tree_cpu(void *ctx)
{
    struct sv *sv = ctx;
    if (!sv->tree_cpu_valid) {
        sv->tree_cpu = sampler_tree_cpu_ns(sv->sampler);
        sv->tree_cpu_valid = true;
    }
    return sv->tree_cpu;
}

/* sysfs: an online CPU is the first of its core when it leads its core's list of CPUs. */
struct core_count {
    int dirfd; /* /sys/devices/system/cpu */
    int cores;
    bool failed;
};

static bool first_cpu(unsigned cpu, void *ctx)
{
    *(unsigned *)ctx = cpu;
    return false;
}

static bool count_core(unsigned cpu, void *ctx)
{
    struct core_count *cc = ctx;
    char path[96], list[256];
    unsigned first = ~0u;
    snprintf(path, sizeof path, "cpu%u/topology/core_cpus_list", cpu);
    ssize_t n = read_file_at(cc->dirfd, path, list, sizeof list);
    if (n < 0) { /* before Linux 5.7 */
        snprintf(path, sizeof path, "cpu%u/topology/thread_siblings_list", cpu);
        n = read_file_at(cc->dirfd, path, list, sizeof list);
    }
    if (n <= 0 || !procfs_parse_cpu_list(list, (size_t)n, first_cpu, &first) || first == ~0u) {
        cc->failed = true;
        return false;
    }
    cc->cores += first == cpu;
    return true;
}

/* Physical cores of the machine (meta.physicalCPUs): from sysfs's topology, a small file a CPU
 * (/proc/cpuinfo, its fallback, asks every CPU for its frequency: 0.2-0.4 ms of a run's start
 * on 2 CPUs, more the more CPUs); 0 when neither says. */
static int physical_cpus(void)
{
    struct core_count cc = {.dirfd = open("/sys/devices/system/cpu", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    char online[4096];
    ssize_t on = cc.dirfd >= 0 ? read_file_at(cc.dirfd, "online", online, sizeof online) : -1;
    bool listed = on > 0 && procfs_parse_cpu_list(online, (size_t)on, count_core, &cc);
    closep(&cc.dirfd);
    if (listed && !cc.failed && cc.cores > 0)
        return cc.cores;
    char *buf = malloc(1 << 20);
    if (!buf)
        return 0;
    ssize_t n = read_file_at(AT_FDCWD, "/proc/cpuinfo", buf, 1 << 20);
    int count = n > 0 ? procfs_count_cores(buf, (size_t)n) : 0;
    free(buf);
    return count;
}

/* The profile's path: -o, else $MOZ_UPLOAD_DIR/profile_resource-usage.json (where Mozilla's CI
 * collects artifacts), else resmon-profile.json here. */
static char *profile_path_for(const struct options *o)
{
    if (o->no_profile) {
        /* the stream the reports are built from, and no profile: a file of our own, removed at
         * the end */
        const char *tmp = getenv("TMPDIR");
        char *p;
        if (asprintf(&p, "%s/resmon-stream.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
            return NULL;
        int fd = mkstemp(p);
        if (fd < 0) {
            log_errno(-errno, "cannot create a temporary file for the stream the reports are built from ('%s')", p);
            free(p);
            return NULL;
        }
        close(fd);
        return p;
    }
    if (o->output)
        return strdup(o->output);
    const char *dir = getenv("MOZ_UPLOAD_DIR");
    if (dir && *dir) {
        char *p;
        if (asprintf(&p, "%s/profile_resource-usage.json", dir) < 0)
            return NULL;
        return p;
    }
    return strdup("resmon-profile.json");
}

static void feed_follower(void *ctx, const char *buf, size_t len) { (void)profile_conv_feed(ctx, buf, len); }

static int open_stream(struct sv *sv)
{
    const struct options *o = sv->o;
    sv->profile_path = profile_path_for(o);
    if (!sv->profile_path)
        return -ENOMEM;
    const char *upload = getenv("MOZ_UPLOAD_DIR");
    int ur;
    if (upload && *upload && (!o->output || sinks_perfherder_dir()) &&
        (ur = sinks_make_upload_dir(upload)) < 0) {
        sv->open_error_said = true;
        return ur;
    }
    /* Extra metadata: the CI's facts, then --meta (last wins). */
    struct cimeta ci;
    cimeta_collect(&ci);
    const char *keys[64], *values[64];
    size_t n = 0;
    for (size_t i = 0; i < ci.n; i++)
        keys[n] = ci.keys[i], values[n++] = ci.values[i];
    keys[n] = "containment", values[n++] = contain_tier_name(contain_tier(sv->contain));
    keys[n] = "resmonVersion", values[n++] = PACKAGE_VERSION;
    for (size_t i = 0; i < o->n_meta && n < ARRAY_SIZE(keys); i++)
        keys[n] = o->meta[i].key, values[n++] = o->meta[i].value;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    int phys = physical_cpus();
    struct stream_meta meta = {
        .product = o->product,
        .interval_ms = (double)o->interval_ns / 1e6,
        .start_wall_ms = sv->wall0,
        .t0_ns = sv->t0,
        .logical_cpus = ncpu > 0 ? (int)ncpu : 1,
        .physical_cpus = phys > 0 ? phys : (ncpu > 0 ? (int)ncpu : 1),
        .main_memory = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0,
        .max_markers = o->max_markers,
        .extra_keys = keys,
        .extra_values = values,
        .n_extra = n,
    };
    int r = stream_open(AT_FDCWD, sv->profile_path, &meta, o->fsync_interval_ns, &sv->stream);
    cimeta_release(&ci);
    if (r < 0)
        return r;
    sv->sink = stream_sink(sv->stream);
    /* The file that was at the path is gone but for its last close, which frees it: the
     * watchdog's, while the setup goes on. */
    watchdog_close(sv->watchdog, stream_take_replaced(sv->stream));
    /* The loop flushes before it waits (stream.h): one write per chunk of output, not per line. */
    stream_hold(sv->stream, true);
    /* Without a follower finalizing still works, it just reads the whole stream then. The
     * follower is handed what is written rather than reading it back. */
    if (o->no_profile || profile_conv_new(stream_fd(sv->stream), &sv->conv) < 0)
        sv->conv = NULL;
    else if (profile_conv_fed(sv->conv) == 0)
        stream_set_tap(sv->stream, feed_follower, sv->conv);
    return sinks_read_stream(sv->sinks, stream_fd(sv->stream));
}

/* What cannot be the profile's path, said plainly (stream.h's errors). */
static void say_open_error(struct sv *sv, int r)
{
    const char *path = sv->profile_path ? sv->profile_path : "?";
    if (sv->open_error_said)
        return;
    log_msg("cannot create the profile '%s': %s", path, outfile_why(r, AT_FDCWD, path));
}

/* Whether the command's output, as passed on, left a line unfinished in fd's file (either
 * stream: both may go to one file). */
static bool output_mid_line(const struct sv *sv, int fd)
{
    for (int i = 0; i < 2; i++)
        if (sv->pt[i] && passthru_mid_line(sv->pt[i], fd))
            return true;
    return false;
}

/* resmon-run wrote a newline to fd: the line is ended. */
static void output_line_ended(struct sv *sv, int fd)
{
    for (int i = 0; i < 2; i++)
        if (sv->pt[i] && passthru_mid_line(sv->pt[i], fd))
            passthru_line_ended(sv->pt[i]);
}

static bool sinks_mid_line(void *ctx, int fd) { return output_mid_line(ctx, fd); }

static void sinks_line_ended(void *ctx, int fd) { output_line_ended(ctx, fd); }

static int start_timer(struct sv *sv)
{
    sv->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (sv->timerfd < 0)
        return -errno;
    /* Absolute ticks from t0: samples never drift, however long each one takes. */
    uint64_t first = sv->t0 + sv->o->interval_ns;
    struct itimerspec its = {
        .it_value = {(time_t)(first / NSEC_PER_SEC), (long)(first % NSEC_PER_SEC)},
        .it_interval = {(time_t)(sv->o->interval_ns / NSEC_PER_SEC), (long)(sv->o->interval_ns % NSEC_PER_SEC)},
    };
    if (timerfd_settime(sv->timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
        return -errno;
    return 0;
}

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    /* Larger pipes mean fewer wake-ups for chatty commands. */
    fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
    return 0;
}

/* ---- setting up ------------------------------------------------------------------------------ */

/* The reports (sinks.h), and the facts they are written from. */
static int setup_reports(struct sv *sv)
{
    const struct options *o = sv->o;
    const char *step_summary = getenv("GITHUB_STEP_SUMMARY");
    struct sinks_config kcfg = {
        .junit = o->junit,
        .otlp = o->otlp,
        .product = o->product,
        .upload_dir = sinks_perfherder_dir(),
        .summary = !o->quiet,
        .github = gha_active(o->ci, o->timeout_mode, getenv("GITHUB_ACTIONS")),
        .github_summary = step_summary && *step_summary ? step_summary : NULL,
    };
    int r = sinks_new(&kcfg, &sv->sinks);
    if (r < 0) {
        log_errno(r, "cannot set up the reports");
        return r;
    }
    sv->sum = sinks_facts(sv->sinks);
    sv->last_sample_ns = sv->t0;
    return 0;
}

/* The tree: its containment, the limits, and the watchdog. */
static int setup_tree(struct sv *sv, struct run_setup *su)
{
    const struct options *o = sv->o;
    const char *why = NULL;
    int r = contain_new(o->containment, &sv->contain, &why);
    if (r < 0) {
        log_errno(r, "cannot set up %s containment", o->containment == CONTAIN_MODE_CGROUP ? "cgroup" : "subreaper");
        return r;
    }
    /* In timeout mode -v says only what GNU timeout says. */
    if (o->verbose && !o->timeout_mode)
        log_msg("containment: %s%s%s%s", contain_tier_name(contain_tier(sv->contain)),
                why ? " (" : "", why ? why : "", why ? ")" : "");
    /* Limits the kernel enforces are set before the command exists (it joins them at its fork). */
    struct limits_config lcfg = {o->memory_limit, o->cpu_limit_ns, o->tasks_limit, NULL, o->interval_ns > 0};
    if ((r = limits_new(&lcfg, sv->contain, &sv->limits)) < 0) {
        log_errno(r, "cannot set up the limits");
        return r;
    }
    if (o->memory_limit || o->cpu_limit_ns || o->tasks_limit) {
        char how[512];
        limits_describe(sv->limits, how, sizeof how);
        if (o->verbose)
            log_msg("limits: %s", how);
        unsigned kernel = limits_by_kernel(sv->limits);
        if (!o->interval_ns && ((o->memory_limit && !(kernel & CONTAIN_LIMIT_MEMORY)) ||
                                (o->tasks_limit && !(kernel & CONTAIN_LIMIT_TASKS))))
            log_warn("sampling is off (-i 0): limits checked at each sample are not checked");
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    sv->ncpu = ncpu > 0 ? (unsigned)ncpu : 1;
    sv->deadline_cpu = limits_cpu_deadline(sv->limits, sv->t0, 0, sv->ncpu);
    /* First, while resmon-run holds no pipe a watchdog could keep open. */
    if (o->kill_leftovers && !o->foreground) {
        const struct sock_fprog *filter = NULL;
        if (!o->no_sandbox && sandbox_watchdog_program(&filter) < 0)
            filter = NULL; /* said at the lock-down, which cannot be had either */
        if ((r = watchdog_new(sv->contain, o->signal, filter, &sv->watchdog)) < 0) {
            log_errno(r, "cannot start the watchdog");
            return r;
        }
        if (asprintf(&su->mark, "%s=%s", WATCHDOG_ENV, watchdog_run_id(sv->watchdog)) < 0) {
            su->mark = NULL;
            return -ENOMEM;
        }
    }
    return 0;
}

/* Interpose on the output only when something needs to see it: the output timeout, or the
 * test-log parsers, for the stream (the profile, or only the reports: --no-profile --junit, or
 * the summary's tests, which --no-profile keeps: they are read from the stream, as the files'
 * are). Then the stream. */
static int setup_output(struct sv *sv, struct run_setup *su, bool *ret_parse)
{
    const struct options *o = sv->o;
    bool parse = o->parse_formats && (!o->no_profile || o->junit || o->otlp || sv->sum);
    bool want_stream = !o->no_profile || o->junit || o->otlp || parse;
    bool interpose = o->output_timeout_ns > 0 || parse;
    int r;
    *ret_parse = parse;
    if (interpose) {
        if ((r = make_pipe(su->child_out)) < 0 || (r = make_pipe(su->child_err)) < 0) {
            log_errno(r, "cannot create pipes");
            return r;
        }
        if ((r = passthru_new(su->child_out[0], STDOUT_FILENO, &sv->pt[0])) < 0) {
            log_errno(r, "cannot set up pass-through");
            return r;
        }
        su->child_out[0] = -1;
        if ((r = passthru_new(su->child_err[0], STDERR_FILENO, &sv->pt[1])) < 0) {
            log_errno(r, "cannot set up pass-through");
            return r;
        }
        su->child_err[0] = -1;
    }
    if (want_stream && (r = open_stream(sv)) < 0) {
        say_open_error(sv, r);
        return r;
    }
    return 0;
}

/* What watches the tree and reads its output: the sampler and its timer, the test-log parsers
 * (parse), the marker socket. */
static int setup_observers(struct sv *sv, bool parse)
{
    const struct options *o = sv->o;
    struct sampler_config scfg;
    sampler_config_init(&scfg);
    scfg.interval_ns = o->interval_ns;
    scfg.pss = o->pss;
    scfg.event_filter = !o->no_event_filter;
    scfg.events_polled = true; /* run_loop reads them first when they wake it */
    int r = sampler_new(&scfg, sv->contain, sv->sink, sv->t0, &sv->sampler);
    if (r < 0) {
        log_errno(r, "cannot set up sampling");
        return r;
    }
    if (o->verbose && !o->timeout_mode) {
        int er = sampler_events_status(sv->sampler);
        if (er == 0)
            log_msg("process events: the kernel's process connector (every process of the tree gets a marker)");
        else if (sampler_names_tasks(sv->sampler))
            log_msg("process events: the kernel's records of the tree's forks and exits (perf events, "
                    "%s; the process connector: %s): every process of the tree gets a marker, its exit "
                    "status when it is read before the process is reaped",
                    sampler_names_way(sv->sampler), er == -ENOTSUP ? "not asked for" : strerror(-er));
        else if (er != -ENOTSUP)
            log_msg("process events: unavailable (%s): the tree is learned at each sample, and a "
                    "process that starts and ends between two samples gets no marker of its own",
                    strerror(-er));
        int nr = sampler_names_status(sv->sampler);
        if (nr == 0)
            log_msg("process names: the kernel's record of each exec (perf events, %s): a process "
                    "gone before its command line is read is named by its program",
                    sampler_names_way(sv->sampler));
        else if (nr != -ENOTSUP)
            log_msg("process names: the kernel's records unavailable (%s): a process gone before its "
                    "command line or name is read is counted unnamed",
                    strerror(-nr));
    }
    if (o->interval_ns && (r = start_timer(sv)) < 0) {
        log_errno(r, "cannot set up the sampling timer");
        return r;
    }
    struct testlog_probe tprobe = {probe_tree_cpu, probe_tree_rss, probe_leaked, sv};
    if (parse) { /* without a stream there is no sink: the parsers only count, for the summary */
        struct testlog_config tcfg = {
            .formats = o->parse_formats,
            .log_info = o->log_info,
            .process_output = o->process_output,
            .wall_at_t0_ms = sv->wall0,
            .t0_ns = sv->t0,
        };
        if ((r = testlog_new(&tcfg, sv->sink, &tprobe, &sv->testlog)) < 0 ||
            (r = linebuf_new(MAX_LINE, &sv->lb[0])) < 0 || (r = linebuf_new(MAX_LINE, &sv->lb[1])) < 0) {
            log_errno(r, "cannot set up test-log parsing");
            return r;
        }
    }
    struct usermark_probe uprobe = {probe_tree_cpu, sv};
    if (!o->no_profile) {
        struct usermark_config ucfg = {.t0_ns = sv->t0};
        r = usermark_new(&ucfg, sv->sink, &uprobe, &sv->um);
        if (r < 0) {
            log_errno(r, "cannot create the marker socket");
            return r;
        }
    }
    return 0;
}

int run_setup(struct sv *sv, struct run_setup *su)
{
    bool parse = false;
    int r = setup_reports(sv);
    if (r < 0)
        return r;
    if ((r = setup_signals(sv, &su->orig_mask, &su->chld_ignored, &su->xfsz_ignored)) < 0) {
        log_errno(r, "cannot set up signal handling");
        return r;
    }
    if ((r = setup_tree(sv, su)) < 0 || (r = setup_output(sv, su, &parse)) < 0 ||
        (r = setup_observers(sv, parse)) < 0)
        return r;
    sinks_attach_run(sv->sinks, &(struct sinks_run){sv, run_facts_now, sinks_mid_line, sinks_line_ended});
    watch_parent(sv);
    return 0;
}

/* ---- the command ----------------------------------------------------------------------------- */

/* The command could not be run: said, and when it was exec that failed, recorded as a run that
 * ended at once (*ret filled: 1); else -errno. */
static int spawn_failed(struct sv *sv, int r, bool exec_failed, struct supervise_result *ret)
{
    const struct options *o = sv->o;
    log_errno(r, "failed to run command '%s'", o->argv[0]);
    /* GNU timeout's habit (`timeout 5 CMD`): the duration taken for the command. */
    uint64_t ns;
    if (r == -ENOENT && !o->timeout_mode && !strchr(o->argv[0], '/') && parse_duration(o->argv[0], &ns) == 0)
        log_msg("hint: for a timeout of %s, run 'resmon-run -t %s -- %s ...' or 'resmon-timeout %s %s ...'",
                o->argv[0], o->argv[0], o->argv[1] ? o->argv[1] : "COMMAND", o->argv[0],
                o->argv[1] ? o->argv[1] : "COMMAND");
    if (!exec_failed)
        return r;
    ret->exit_status = r == -ENOENT ? EXIT_ENOENT : EXIT_CANNOT_INVOKE;
    ret->raise_signal = 0;
    /* The profile still tells what happened: a command that never ran. */
    sv->exit_ns = now_ns();
    sv->wstatus = ret->exit_status << 8;
    sv->exec_failed = true;
    emit_command_marker(sv);
    profile_checkpoint(sv, "exec-failed");
    return 1;
}

int run_start(struct sv *sv, struct run_setup *su, struct supervise_result *ret)
{
    const struct options *o = sv->o;
    int r;
    /* Give the terminal to the command's group when we hold it: it may want to read it. */
    bool take_tty = !o->foreground && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();

    /* --deny: built here, loaded by the child just before exec. Refusing to run is the only
     * honest answer when the user asked for a restriction that cannot be had. */
    struct sandbox_filter *cmd_filter = NULL;
    if (o->deny && (r = sandbox_command_filter_new(o->deny, &cmd_filter)) < 0) {
        log_errno(r, "cannot set up the --deny filters for the command");
        return r;
    }

    /* Private before the command exists: it can never attach to us (sandbox.h). */
    if (!o->no_sandbox && (r = sandbox_private_self()) < 0)
        log_errno(r, "warning: resmon-run stays dumpable");

    /* GNU timeout catches these (and its --signal), so its command, whose caught signals exec
     * resets, gets them at their default even from a caller that ignored them: a background
     * `timeout` from a script, whose shell ignores INT, still stops its command on INT. */
    sigset_t default_signals;
    sigemptyset(&default_signals);
    static const int gnu_caught[] = {SIGALRM, SIGINT, SIGQUIT, SIGHUP, SIGTERM};
    for (size_t i = 0; i < ARRAY_SIZE(gnu_caught); i++)
        sigaddset(&default_signals, gnu_caught[i]);
    if (o->signal && o->signal != SIGKILL && o->signal != SIGSTOP)
        sigaddset(&default_signals, o->signal);

    struct spawn_config sc = {
        .argv = o->argv,
        .contain = sv->contain,
        .own_group = !o->foreground,
        .take_terminal = take_tty,
        .stdout_fd = su->child_out[1],
        .stderr_fd = su->child_err[1],
        .extra_fd = sv->um ? usermark_fd_for_child(sv->um) : -1,
        .env_name = USERMARK_ENV,
        .child_mask = &su->orig_mask,
        .restore_sigchld_ignore = su->chld_ignored,
        .restore_sigxfsz = true,
        .sigxfsz_ignored = su->xfsz_ignored,
        .default_signals = &default_signals,
        .mark = su->mark,
        /* CPython prints every thread's traceback on a fatal signal with this set at its start */
        .env_extra = o->dump && (o->dump_runtimes & FORENSICS_RT_PYTHON) ? "PYTHONFAULTHANDLER=1" : NULL,
        .pdeath_signal = o->signal ? o->signal : SIGKILL,
        .before_exec = cmd_filter ? sandbox_command_filter_apply : NULL,
        .before_exec_ctx = cmd_filter,
    };
    /* before the command runs: nothing it forks, however soon, escapes the events (cpuprof.h) */
    if (o->cpu_profile_hz && sv->stream && cpuprof_new(o->cpu_profile_hz, sv->sink, sv->t0, &sv->cpuprof) == 0 &&
        cpuprof_start(sv->cpuprof, contain_cgroup_fd(sv->contain)) < 0 && o->verbose)
        log_msg("cpu profile: unavailable: %s", cpuprof_error(sv->cpuprof));
    bool exec_failed;
    r = spawn_command(&sc, &sv->pid, &exec_failed);
    sandbox_filter_free(cmd_filter);
    closep(&su->child_out[1]);
    closep(&su->child_err[1]);
    su->child_out[1] = su->child_err[1] = -1;
    if (r < 0)
        return spawn_failed(sv, r, exec_failed, ret);
    sv->tty_given = take_tty;
    contain_set_root(sv->contain, sv->pid);
    watchdog_set_group(sv->watchdog, o->foreground ? 0 : sv->pid);
    open_command_marker(sv);
    if (sv->um)
        usermark_close_child_fd(sv->um);
    {
        /* the command line as exec'd, words joined by spaces */
        struct jsonw words;
        jsonw_init(&words);
        for (int i = 0; i < o->argc; i++) {
            if (i)
                jsonw_append(&words, " ", 1);
            jsonw_append(&words, o->argv[i], strlen(o->argv[i]));
        }
        sampler_track(sv->sampler, sv->pid, now_ns(), jsonw_failed(&words) ? NULL : words.buf);
        jsonw_release(&words);
    }
    /* The command runs and every descriptor is open: from here on resmon-run needs no new
     * process, socket or executable mapping (sandbox.h). */
    if (!o->no_sandbox) {
        int wr = watchdog_wait_sandboxed(sv->watchdog);
        int sr = sandbox_lockdown_self();
        if (sr < 0 && (!o->timeout_mode || o->verbose))
            log_errno(sr, "warning: running without the seccomp sandbox");
        else if (wr < 0 && wr != -ESRCH && (!o->timeout_mode || o->verbose))
            log_errno(wr, "warning: the watchdog runs without the seccomp sandbox");
    }
    sandbox_test_trigger();
    sv->last_output_ns = now_ns();
    if (o->output_timeout_ns)
        sv->deadline_output = sat_add_u64(sv->last_output_ns, o->output_timeout_ns);
    return 0;
}

/* ---- taking down ----------------------------------------------------------------------------- */

void run_teardown(struct sv *sv, struct run_setup *su)
{
    if (sv->tty_given) {
        /* Take the terminal back for the caller's group; we are in the background now. */
        sigset_t ttou, old;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        sigprocmask(SIG_BLOCK, &ttou, &old);
        tcsetpgrp(STDIN_FILENO, getpgrp());
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    /* Done with the tree (or it never was): the watchdog leaves it alone. */
    watchdog_release(sv->watchdog);
    for (int i = 0; i < 2; i++) {
        passthru_free(sv->pt[i]);
        closep(&su->child_out[i]);
        closep(&su->child_err[i]);
    }
    closep(&sv->parentfd);
    closep(&sv->sigfd);
    closep(&sv->timerfd);
    usermark_free(sv->um);
    testlog_free(sv->testlog);
    linebuf_free(sv->lb[0]);
    linebuf_free(sv->lb[1]);
    sampler_free(sv->sampler);
    cpuprof_free(sv->cpuprof);
    limits_free(sv->limits);
    contain_free(sv->contain);
    stream_set_tap(sv->stream, NULL, NULL);
    profile_conv_free(sv->conv);
    sinks_free(sv->sinks);
    stream_close(sv->stream);
    closep(&sv->profile_lock);
    if (sv->o->no_profile && sv->profile_path)
        unlink(sv->profile_path);
    free(sv->profile_path);
    free(sv->dump_path);
    leaks_release(&sv->leaks);
    free(su->mark);
}

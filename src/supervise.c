/* supervise.c — see supervise.h. */
#include "supervise.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>

#include "contain.h"
#include "log.h"
#include "sandbox.h"
#include "spawn.h"
#include "util.h"

#define PASS_BUF (128 * 1024)

enum phase {
    PH_RUNNING,   /* the command runs, nothing asked it to stop */
    PH_STOPPING,  /* the stop signal was sent; waiting for the command */
    PH_LEFTOVERS, /* the command is gone; stopping what it left behind */
    PH_DRAIN,     /* everything is gone; reading the last output */
    PH_DONE,
};

enum stop_cause { CAUSE_NONE, CAUSE_TIMEOUT, CAUSE_OUTPUT_TIMEOUT, CAUSE_SIGNAL, CAUSE_PARENT };

static const char *cause_name(enum stop_cause c)
{
    switch (c) {
    case CAUSE_TIMEOUT: return "timeout";
    case CAUSE_OUTPUT_TIMEOUT: return "output-timeout";
    case CAUSE_SIGNAL: return "signal";
    case CAUSE_PARENT: return "parent-died";
    default: return "none";
    }
}

/* One of the command's output streams, passed through to ours. */
struct outpipe {
    int rfd;         /* our end of the command's pipe (non-blocking); -1 when closed */
    int wfd;         /* where the bytes go: our stdout/stderr, maybe reopened non-blocking */
    bool wfd_owned;  /* wfd was opened by us */
    bool wfd_nonblock;
    char *buf;
    size_t off, len; /* pending bytes buf[off..off+len) not yet written downstream */
};

struct sv {
    const struct options *o;
    uint64_t t0;
    int sigfd, parentfd;
    struct contain *contain;
    pid_t pid;
    bool exited;
    int wstatus;
    uint64_t exit_ns;
    struct outpipe out[2];
    uint64_t last_output_ns;
    uint64_t deadline_timeout, deadline_output, deadline_kill, deadline_grace;
    enum phase phase;
    enum stop_cause cause;
    int stop_signal;
    bool timed_out;
    bool kill_sent;
    bool tty_given;
    unsigned stop_requests;
    size_t leftovers; /* processes found alive after the command exited */
};

/* ---- output pass-through ------------------------------------------------------------------- */

/* Our stdout/stderr: a pipe gets a private non-blocking open file description (through
 * /proc/self/fd), so a slow reader never blocks the loop — and the caller's description keeps its
 * flags. Files and terminals are written blocking: their writes do not wait on a reader. */
static void outpipe_target(struct outpipe *op, int fd)
{
    op->wfd = fd;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        int nfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (nfd >= 0) {
            op->wfd = nfd;
            op->wfd_owned = true;
            op->wfd_nonblock = true;
        }
    }
}

static void outpipe_close_read(struct outpipe *op)
{
    if (op->rfd >= 0)
        close(op->rfd);
    op->rfd = -1;
}

/* Write what is pending. Downstream gone (EPIPE, or any hard error): close our read end, so the
 * command sees exactly what it would have seen writing there itself (SIGPIPE/EPIPE). */
static void outpipe_flush(struct outpipe *op)
{
    while (op->len > 0) {
        ssize_t n = write(op->wfd, op->buf + op->off, op->len);
        if (n > 0) {
            op->off += (size_t)n;
            op->len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        op->len = 0;
        outpipe_close_read(op);
        return;
    }
    op->off = 0;
}

/* Read one chunk from the command. Returns false at EOF (or error). */
static bool outpipe_read(struct sv *sv, struct outpipe *op, int stream)
{
    ssize_t n = read(op->rfd, op->buf, PASS_BUF);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0) {
        outpipe_close_read(op);
        return false;
    }
    sv->last_output_ns = now_ns();
    op->off = 0;
    op->len = (size_t)n;
    (void)stream;
    outpipe_flush(op);
    return true;
}

static void outpipe_release(struct outpipe *op)
{
    outpipe_close_read(op);
    if (op->wfd_owned)
        close(op->wfd);
    free(op->buf);
}

/* ---- signals ------------------------------------------------------------------------------- */

static void send_stop_signal(struct sv *sv, int sig)
{
    if (sv->o->verbose) {
        char name[32];
        log_msg("sending signal %s to command '%s'", signal_name(sig, name, sizeof name), sv->o->argv[0]);
    }
    if (sig == SIGKILL)
        sv->kill_sent = true;
    if (sv->o->foreground) {
        /* Only the command: its children are left alone, as with GNU timeout --foreground. */
        if (!sv->exited)
            kill(sv->pid, sig);
        if (sig != SIGKILL && sig != SIGCONT && sig != 0 && !sv->exited)
            kill(sv->pid, SIGCONT);
        return;
    }
    if (!sv->exited)
        kill(sv->pid, sig);
    contain_signal_all(sv->contain, sig);
    /* A stopped process would keep the signal pending forever. */
    if (sig != SIGKILL && sig != SIGCONT && sig != 0)
        contain_signal_all(sv->contain, SIGCONT);
}

/* ---- the profile's hooks ------------------------------------------------------------------- */

/* Write the stream and rename a complete profile over it. Called BEFORE any child is signalled
 * on a stop, and again at the very end. */
static void profile_checkpoint(struct sv *sv, const char *why)
{
    (void)sv;
    (void)why;
}

/* ---- the stop sequence --------------------------------------------------------------------- */

static void stop(struct sv *sv, enum stop_cause cause, int sig)
{
    uint64_t now = now_ns();
    if (sv->phase != PH_RUNNING) {
        /* A second request while stopping: the caller is out of patience — kill now. */
        if (cause == CAUSE_SIGNAL || cause == CAUSE_PARENT) {
            if (++sv->stop_requests > 1 && !sv->kill_sent && sv->phase == PH_STOPPING)
                send_stop_signal(sv, SIGKILL);
        }
        return;
    }
    sv->stop_requests++;
    sv->cause = cause;
    sv->timed_out = cause == CAUSE_TIMEOUT || cause == CAUSE_OUTPUT_TIMEOUT;
    sv->stop_signal = sig;
    sv->phase = PH_STOPPING;
    /* Finalize first: a CI that follows its TERM with a KILL must still find a profile. */
    profile_checkpoint(sv, cause_name(cause));
    send_stop_signal(sv, sig);
    if (sv->o->kill_after_ns)
        sv->deadline_kill = sat_add_u64(now, sv->o->kill_after_ns);
    else if (!sv->timed_out && sv->o->kill_leftovers)
        sv->deadline_kill = sat_add_u64(now, sv->o->grace_ns);
}

static void on_command_exit(struct sv *sv)
{
    sv->deadline_timeout = sv->deadline_output = NS_INFINITY;
    if (!sv->o->kill_leftovers || sv->o->foreground) {
        sv->phase = PH_DRAIN;
        return;
    }
    if (contain_empty(sv->contain)) {
        sv->phase = PH_DRAIN;
        return;
    }
    pid_t *pids = NULL;
    size_t n = 0;
    if (contain_members(sv->contain, &pids, &n) == 0)
        sv->leftovers = n;
    free(pids);
    if (sv->o->verbose)
        log_msg("stopping %zu process%s left behind by '%s'", sv->leftovers, sv->leftovers == 1 ? "" : "es",
                sv->o->argv[0]);
    sv->phase = PH_LEFTOVERS;
    contain_signal_all(sv->contain, SIGTERM);
    contain_signal_all(sv->contain, SIGCONT);
    sv->deadline_grace = sat_add_u64(now_ns(), sv->o->grace_ns);
}

static void reap(struct sv *sv)
{
    for (;;) {
        int st;
        struct rusage ru;
        pid_t p = wait4(-1, &st, WNOHANG, &ru);
        if (p <= 0)
            break;
        contain_reaped(sv->contain, p);
        if (p == sv->pid) {
            sv->exited = true;
            sv->wstatus = st;
            sv->exit_ns = now_ns();
        }
    }
}

/* ---- the loop ------------------------------------------------------------------------------ */

static int setup_signals(struct sv *sv, sigset_t *ret_orig_mask, bool *ret_chld_ignored)
{
    sigset_t mask;
    sigemptyset(&mask);
    int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM};
    for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
        sigaddset(&mask, sigs[i]);
    /* A write to a closed downstream must come back as EPIPE, not kill us; the command gets the
     * caller's mask back before exec. */
    sigaddset(&mask, SIGPIPE);
    if (sigprocmask(SIG_BLOCK, &mask, ret_orig_mask) < 0)
        return -errno;
    /* An ignored SIGCHLD would make the kernel reap our children before we learn their status. */
    struct sigaction sa;
    *ret_chld_ignored = sigaction(SIGCHLD, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN;
    if (*ret_chld_ignored)
        signal(SIGCHLD, SIG_DFL);
    sigdelset(&mask, SIGPIPE);
    sv->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    return sv->sigfd < 0 ? -errno : 0;
}

/* The death of our parent is a stop request (the CI runner went away). A pidfd becomes readable
 * when the process exits; checked against the pid read before, to close the race. */
static void watch_parent(struct sv *sv)
{
    pid_t pp = getppid();
    sv->parentfd = -1;
    if (pp <= 1)
        return; /* PID 1 of a namespace (0) or already orphaned to init: nothing to watch */
    int fd = (int)syscall(SYS_pidfd_open, pp, 0);
    if (fd < 0)
        return;
    if (getppid() != pp) {
        close(fd);
        sv->parentfd = -2; /* died already: handled as soon as the loop starts */
        return;
    }
    sv->parentfd = fd;
}

static bool finished(struct sv *sv)
{
    if (!sv->exited)
        return false;
    if (sv->phase == PH_RUNNING || sv->phase == PH_STOPPING)
        on_command_exit(sv);
    if (sv->phase == PH_LEFTOVERS && contain_empty(sv->contain))
        sv->phase = PH_DRAIN;
    if (sv->phase != PH_DRAIN)
        return false;
    /* Leftovers may keep the pipes open when they were not killed: take what is there now. */
    for (int i = 0; i < 2; i++) {
        struct outpipe *op = &sv->out[i];
        if (op->rfd < 0)
            continue;
        if (!sv->o->kill_leftovers || sv->o->foreground) {
            while (op->rfd >= 0 && op->len == 0 && outpipe_read(sv, op, i + 1)) {
                if (op->len == 0)
                    break;
                if (op->len > 0 && op->wfd_nonblock) {
                    /* Downstream is slow: give it a moment through poll, bounded by the loop. */
                    return false;
                }
            }
            outpipe_close_read(op);
        } else
            return false; /* wait for EOF: every writer is gone, so it comes */
    }
    for (int i = 0; i < 2; i++)
        if (sv->out[i].len > 0)
            return false;
    sv->phase = PH_DONE;
    return true;
}

static int poll_timeout_ms(struct sv *sv)
{
    uint64_t next = NS_INFINITY;
    if (sv->phase == PH_RUNNING) {
        next = MIN(next, sv->deadline_timeout);
        next = MIN(next, sv->deadline_output);
    }
    if (sv->phase == PH_STOPPING)
        next = MIN(next, sv->deadline_kill);
    if (sv->phase == PH_LEFTOVERS) {
        next = MIN(next, sv->deadline_grace);
        /* Leftovers that are not our children die without a SIGCHLD to us: look again soon. */
        next = MIN(next, now_ns() + 20 * NSEC_PER_MSEC);
    }
    if (next == NS_INFINITY)
        return -1;
    uint64_t now = now_ns();
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

static void check_deadlines(struct sv *sv)
{
    uint64_t now = now_ns();
    if (sv->phase == PH_RUNNING && now >= sv->deadline_timeout)
        stop(sv, CAUSE_TIMEOUT, sv->o->signal);
    if (sv->phase == PH_RUNNING && now >= sv->deadline_output) {
        if (sv->o->verbose)
            log_msg("no output from '%s' for the output timeout", sv->o->argv[0]);
        stop(sv, CAUSE_OUTPUT_TIMEOUT, sv->o->signal);
    }
    if (sv->phase == PH_STOPPING && now >= sv->deadline_kill) {
        sv->deadline_kill = NS_INFINITY;
        send_stop_signal(sv, SIGKILL);
    }
    if (sv->phase == PH_LEFTOVERS && now >= sv->deadline_grace) {
        sv->deadline_grace = NS_INFINITY;
        if (sv->o->verbose)
            log_msg("killing what is left of the process tree");
        contain_kill_all(sv->contain);
    }
}

static void handle_signals(struct sv *sv)
{
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(sv->sigfd, &si, sizeof si);
        if (n != (ssize_t)sizeof si)
            break;
        switch (si.ssi_signo) {
        case SIGCHLD: reap(sv); break;
        case SIGALRM: stop(sv, CAUSE_TIMEOUT, sv->o->signal); break;
        default: stop(sv, CAUSE_SIGNAL, (int)si.ssi_signo); break;
        }
    }
}

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    /* Larger pipes mean fewer wake-ups for chatty commands. */
    fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    return 0;
}

static void compute_result(struct sv *sv, struct supervise_result *ret)
{
    int status = sv->wstatus;
    bool preserve = sv->o->preserve_status;
    ret->raise_signal = 0;
    if (WIFEXITED(status))
        ret->exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (WCOREDUMP(status))
            log_msg("the monitored command dumped core");
        if (!sv->timed_out)
            ret->raise_signal = sig;
        /* KILL had to be sent: let callers tell a forced kill from a clean timeout. */
        if (sv->timed_out && sig == SIGKILL)
            preserve = true;
        ret->exit_status = 128 + sig;
    } else
        ret->exit_status = EXIT_CANCELED;
    if (sv->timed_out && !preserve)
        ret->exit_status = EXIT_TIMEDOUT;
}

int supervise_run(const struct options *o, struct supervise_result *ret)
{
    struct sv sv = {.o = o, .sigfd = -1, .parentfd = -1, .out = {{.rfd = -1, .wfd = -1}, {.rfd = -1, .wfd = -1}}};
    sv.t0 = now_ns();
    sv.deadline_timeout = o->timeout_ns ? sat_add_u64(sv.t0, o->timeout_ns) : NS_INFINITY;
    sv.deadline_output = NS_INFINITY;
    sv.deadline_kill = sv.deadline_grace = NS_INFINITY;
    int r;
    int child_out[2] = {-1, -1}, child_err[2] = {-1, -1};

    sigset_t orig_mask;
    bool chld_ignored = false;
    r = setup_signals(&sv, &orig_mask, &chld_ignored);
    if (r < 0) {
        log_errno(r, "cannot set up signal handling");
        goto out;
    }
    const char *why = NULL;
    r = contain_new(o->containment, &sv.contain, &why);
    if (r < 0) {
        log_errno(r, "cannot set up %s containment", o->containment == CONTAIN_MODE_CGROUP ? "cgroup" : "subreaper");
        goto out;
    }
    /* In timeout mode -v says only what GNU timeout says. */
    if (o->verbose && !o->timeout_mode)
        log_msg("containment: %s%s%s%s", contain_tier_name(contain_tier(sv.contain)),
                why ? " (" : "", why ? why : "", why ? ")" : "");

    /* Interpose on the output only when something needs to see it. */
    bool interpose = o->output_timeout_ns > 0 || (!o->no_profile && o->parse_formats);
    if (interpose) {
        if ((r = make_pipe(child_out)) < 0 || (r = make_pipe(child_err)) < 0) {
            log_errno(r, "cannot create pipes");
            goto out;
        }
        for (int i = 0; i < 2; i++) {
            sv.out[i].buf = malloc(PASS_BUF);
            if (!sv.out[i].buf) {
                r = -ENOMEM;
                log_errno(r, "cannot allocate buffers");
                goto out;
            }
            outpipe_target(&sv.out[i], i + 1);
        }
        sv.out[0].rfd = TAKE_FD(child_out[0]);
        sv.out[1].rfd = TAKE_FD(child_err[0]);
    }

    watch_parent(&sv);

    /* Give the terminal to the command's group when we hold it: it may want to read it. */
    bool take_tty = !o->foreground && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();

    /* --deny: built here, loaded by the child just before exec. Refusing to run is the only
     * honest answer when the user asked for a restriction that cannot be had. */
    struct sandbox_filter *cmd_filter = NULL;
    if (o->deny && (r = sandbox_command_filter_new(o->deny, &cmd_filter)) < 0) {
        log_errno(r, "cannot set up the --deny filters for the command");
        goto out;
    }

    struct spawn_config sc = {
        .argv = o->argv,
        .contain = sv.contain,
        .own_group = !o->foreground,
        .take_terminal = take_tty,
        .stdout_fd = child_out[1],
        .stderr_fd = child_err[1],
        .extra_fd = -1,
        .env_name = "RESMON_FD",
        .child_mask = &orig_mask,
        .restore_sigchld_ignore = chld_ignored,
        .pdeath_signal = o->signal ? o->signal : SIGKILL,
        .before_exec = cmd_filter ? sandbox_command_filter_apply : NULL,
        .before_exec_ctx = cmd_filter,
    };
    bool exec_failed;
    r = spawn_command(&sc, &sv.pid, &exec_failed);
    sandbox_filter_free(cmd_filter);
    if (child_out[1] >= 0)
        close(TAKE_FD(child_out[1]));
    if (child_err[1] >= 0)
        close(TAKE_FD(child_err[1]));
    if (r < 0) {
        log_errno(r, "failed to run command '%s'", o->argv[0]);
        if (exec_failed) {
            ret->exit_status = r == -ENOENT ? EXIT_ENOENT : EXIT_CANNOT_INVOKE;
            ret->raise_signal = 0;
            r = 0;
        }
        goto out;
    }
    sv.tty_given = take_tty;
    contain_set_root(sv.contain, sv.pid);
    /* The command runs and every descriptor is open: from here on resmon-run needs no new
     * process, socket or executable mapping (sandbox.h). */
    if (!o->no_sandbox) {
        int sr = sandbox_lockdown_self();
        if (sr < 0 && (!o->timeout_mode || o->verbose))
            log_errno(sr, "warning: running without the seccomp sandbox");
    }
    sandbox_test_trigger();
    sv.last_output_ns = now_ns();
    if (o->output_timeout_ns)
        sv.deadline_output = sat_add_u64(sv.last_output_ns, o->output_timeout_ns);
    if (sv.parentfd == -2) {
        sv.parentfd = -1;
        stop(&sv, CAUSE_PARENT, SIGTERM);
    }

    while (!finished(&sv)) {
        struct pollfd pfd[5];
        int n = 0, i_sig = -1, i_parent = -1, i_out[2] = {-1, -1};
        pfd[i_sig = n++] = (struct pollfd){.fd = sv.sigfd, .events = POLLIN};
        if (sv.parentfd >= 0)
            pfd[i_parent = n++] = (struct pollfd){.fd = sv.parentfd, .events = POLLIN};
        for (int i = 0; i < 2; i++) {
            struct outpipe *op = &sv.out[i];
            if (op->len > 0 && op->wfd_nonblock)
                pfd[i_out[i] = n++] = (struct pollfd){.fd = op->wfd, .events = POLLOUT};
            else if (op->rfd >= 0 && op->len == 0)
                pfd[i_out[i] = n++] = (struct pollfd){.fd = op->rfd, .events = POLLIN};
        }
        int pr = poll(pfd, (nfds_t)n, poll_timeout_ms(&sv));
        if (pr < 0 && errno != EINTR) {
            r = -errno;
            log_errno(r, "poll");
            break;
        }
        if (pr > 0) {
            if (pfd[i_sig].revents)
                handle_signals(&sv);
            if (i_parent >= 0 && pfd[i_parent].revents) {
                close(sv.parentfd);
                sv.parentfd = -1;
                if (o->verbose)
                    log_msg("parent process died");
                stop(&sv, CAUSE_PARENT, SIGTERM);
            }
            for (int i = 0; i < 2; i++) {
                if (i_out[i] < 0 || !pfd[i_out[i]].revents)
                    continue;
                struct outpipe *op = &sv.out[i];
                if (op->len > 0)
                    outpipe_flush(op);
                else
                    outpipe_read(&sv, op, i + 1);
            }
            if (o->output_timeout_ns && sv.phase == PH_RUNNING)
                sv.deadline_output = sat_add_u64(sv.last_output_ns, o->output_timeout_ns);
        }
        check_deadlines(&sv);
    }
    if (r < 0)
        goto out;

    profile_checkpoint(&sv, "end");
    compute_result(&sv, ret);
    r = 0;
out:
    if (sv.tty_given) {
        /* Take the terminal back for the caller's group; we are in the background now. */
        sigset_t ttou, old;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        sigprocmask(SIG_BLOCK, &ttou, &old);
        tcsetpgrp(STDIN_FILENO, getpgrp());
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
    for (int i = 0; i < 2; i++) {
        outpipe_release(&sv.out[i]);
        closep(&child_out[i]);
        closep(&child_err[i]);
    }
    closep(&sv.parentfd);
    closep(&sv.sigfd);
    contain_free(sv.contain);
    return r;
}

/* main.c — entry point: options → run → exit status. The only place that exits. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log.h"
#include "base/outfile.h"
#include "base/util.h"
#include "profile/profile.h"
#include "profile/usermark.h"
#include "report/compare.h"
#include "report/libxml.h"
#include "report/results.h"
#include "report/sinks.h"
#include "run/supervise.h"

/* Die of the signal the command died of, so our caller sees what it would have seen without us.
 * Core dumps are disabled first: the command already dumped one if it was going to. */
static void raise_signal(int sig)
{
    struct rlimit rl = {0, 0};
    if (setrlimit(RLIMIT_CORE, &rl) < 0)
        return;
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}

int main(int argc, char **argv)
{
    log_set_program(argv[0]);
    struct options o;
    int r = cli_parse(argc, argv, &o);
    if (r)
        return r;
    /* Now, before the seccomp lock-down forbids mapping code (libxml.h). */
    const char *why;
    if (o.junit && libxml_load(&why) < 0) {
        log_msg("--junit: cannot load libxml2 (%s): %s; install it (Debian: libxml2) or leave out --junit",
                XML_SONAME, why);
        return EXIT_CANCELED;
    }
    int status = EXIT_CANCELED;
    switch (o.action) {
    case CLI_EXIT:
        status = fflush(stdout) == 0 ? 0 : EXIT_CANCELED;
        break;
    case CLI_RECOVER: {
        /* The reports first: converting in place replaces the stream they are read from. */
        struct sinks_config sc = {.junit = o.junit, .otlp = o.otlp, .product = o.product,
                                  .upload_dir = sinks_perfherder_dir()};
        int jr = sinks_recover(&sc, o.recover);
        struct profile_stats st;
        const char *out = o.output ? o.output : o.recover;
        /* What is at the output path is judged first, so that its errors are not the input's. */
        r = outfile_check(AT_FDCWD, out);
        if (r < 0 && r != -ENOENT) {
            log_msg("cannot write the profile '%s': %s", out, outfile_why(r, AT_FDCWD, out));
            status = EXIT_CANCELED;
            break;
        }
        r = profile_recover(o.recover, o.output, o.gzip, &st);
        if (r == PROFILE_RECOVER_ALREADY_FULL) {
            if (strcmp(out, o.recover) == 0)
                log_msg("'%s' is already a full profile: nothing to do", o.recover);
            else
                log_msg("'%s' is already a full profile: copied to '%s'", o.recover, out);
            status = 0;
        } else if (r == -EINVAL) {
            log_msg("'%s' is neither a profile stream nor a profile", o.recover);
        } else if (r == -EBUSY) {
            log_msg("'%s' is being written by a running resmon-run: convert a copy with -o FILE", o.recover);
        } else if (r < 0) {
            log_msg("cannot recover '%s' into '%s': %s", o.recover, out, outfile_why(r, AT_FDCWD, out));
        } else {
            log_msg("recovered '%s' into '%s'%s: %llu markers, %llu counters, %llu damaged line%s skipped, "
                    "%llu open item%s closed",
                    o.recover, out, o.gzip ? " (gzip)" : "", (unsigned long long)st.markers,
                    (unsigned long long)st.counters, (unsigned long long)st.skipped_lines,
                    st.skipped_lines == 1 ? "" : "s", (unsigned long long)st.closed_open,
                    st.closed_open == 1 ? "" : "s");
            if (st.left_out)
                log_msg("%llu markers past the stream's marker limit were left out",
                        (unsigned long long)st.left_out);
            status = 0;
        }
        if (jr < 0)
            status = EXIT_CANCELED;
        break;
    }
    case CLI_COMPARE: {
        struct results *a = NULL, *b = NULL;
        const char *bad = o.argv[0];
        r = compare_load(o.argv[0], &a);
        if (r == 0) {
            bad = o.argv[1];
            r = compare_load(o.argv[1], &b);
        }
        if (r == -EINVAL)
            log_msg("'%s' is neither a profile stream nor a profile", bad);
        else if (r < 0)
            log_errno(r, "cannot read '%s'", bad);
        else {
            struct compare_options co = {o.threshold_pct, o.markdown};
            char *text;
            size_t len, regressions;
            r = compare_format(a, b, o.argv[0], o.argv[1], &co, &text, &len, &regressions);
            if (r == 0) {
                r = write_all(STDOUT_FILENO, text, len);
                free(text);
            }
            if (r < 0)
                log_errno(r, "cannot write the comparison");
            else
                status = regressions ? 1 : 0;
        }
        results_free(a);
        results_free(b);
        break;
    }
    case CLI_MARK:
        r = usermark_send(o.argc, o.argv);
        if (r == -EINVAL)
            log_msg("usage: %s --mark event|begin|end|phase-begin|phase-end NAME [TEXT]", log_program());
        else if (r == -EBADF)
            log_msg("--mark: not running under resmon-run (%s is not set)", USERMARK_ENV);
        else if (r < 0)
            log_errno(r, "--mark: cannot send the record");
        status = r < 0 ? EXIT_CANCELED : 0;
        break;
    case CLI_RUN: {
        struct supervise_result res;
        if (supervise_run(&o, &res) == 0) {
            status = res.exit_status;
            if (res.raise_signal) {
                cli_release(&o);
                raise_signal(res.raise_signal);
            }
        }
        break;
    }
    }
    cli_release(&o);
    return status;
}

/* supervise.h — one run of the command: the poll loop, the deadlines, the stop sequence.
 *
 * Everything that happens is an fd becoming readable or a deadline passing: a signalfd (CHLD;
 * TERM INT HUP QUIT = stop requested; ALRM = time out now), a pidfd of our parent (its death is a
 * stop request), the sampling timerfd, the command's stdout/stderr pipes (when interposed), the
 * marker socket. No signal handlers, no threads.
 *
 * The stop sequence (timeout, output timeout, stop request): record the timeout marker (open
 * tests, live processes), finalize the profile, and only then signal the tree; KILL after
 * --kill-after (or --grace for stop requests); when the tree is gone, finalize again.
 */
#ifndef RESMON_SUPERVISE_H
#define RESMON_SUPERVISE_H

#include "run/options.h"

struct supervise_result {
    int exit_status;  /* what resmon-run exits with */
    int raise_signal; /* non-zero: re-raise this signal on ourselves instead (the command died of
                         it and we were not the cause), exit_status as the fallback */
};

/* Run o->argv under supervision. Returns 0 with *ret filled, or -errno when resmon-run itself
 * could not do its job before the command ran (already logged; exit 125). */
int supervise_run(const struct options *o, struct supervise_result *ret);

#endif

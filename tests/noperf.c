/* noperf — run a command where perf_event_open(2) fails with EPERM, as under a container
 * runtime's default seccomp profile (Docker's refuses it so): tests/cpu-profile.sh shows that
 * resmon-run then samples nothing, says why, and runs the command unchanged.
 *
 *   noperf COMMAND [ARG...]
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: noperf COMMAND [ARG...]\n");
        return 2;
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(perf_event_open), 0) < 0 || seccomp_load(ctx) < 0) {
        perror("noperf: cannot load the filter");
        return 2;
    }
    seccomp_release(ctx);
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}

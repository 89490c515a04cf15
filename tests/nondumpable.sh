#!/bin/sh
# Non-dumpable under the sandbox: the files in /proc/PID of a non-dumpable process belong to root,
# which shows only when resmon-run runs as another user. As root it runs as nobody, when nobody
# can reach the build; else the case is skipped (the unprivileged run of the suite covers it).
. "$TOP_SRCDIR/tests/lib.sh"
grep -q '^Seccomp:' /proc/self/status || skip "the kernel has no seccomp"
asuser=""
if [ "$(id -u)" -eq 0 ]; then
    command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups "$HELPER" exit 0 2>/dev/null ||
        skip "running as root, and nobody cannot run the helper from this build directory"
    asuser="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
# run [ARGS...]: resmon-run ARGS in the background, as the other user; $sup its pid
run() {
    new_events
    $asuser "$RESMON_RUN" --no-profile --output-timeout=100 "$@" -- \
        sh -c "echo ready \$\$; exec '$HELPER' sleep 60" >"$HELPER_EVENTS" &
    sup=$!
    wait_event "ready *" >/dev/null
}
run --no-sandbox
own=$(stat -c %u "/proc/$sup/status")
kill -TERM $sup; wait $sup
[ "$own" -ne 0 ] || fail "a dumpable run already shows root as the owner"
run
own=$(stat -c %u "/proc/$sup/status")
kill -TERM $sup; wait $sup
[ "$own" -eq 0 ] || fail "resmon-run is dumpable under the sandbox (owner $own)"
exit 0

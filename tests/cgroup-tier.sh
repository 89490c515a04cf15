#!/bin/sh
# What only the cgroup tier (root, a writable cgroup2 hierarchy) can show: a process that moves
# itself out of the run's cgroup is still the run's.
. "$TOP_SRCDIR/tests/lib.sh"
cgroup_available || skip "no writable cgroup2 hierarchy (the cgroup tier needs root)"

# It leaves the cgroup and leaves an orphan in its own session there: re-parented to resmon-run,
# it is stopped at the end, and resmon-run ends.
# The deadline once it has left (ALRM is resmon-run's timer).
new_events
"$RESMON_RUN" -q --no-profile --containment=cgroup -t 60 -k 0.5 --grace 0.2 -- \
    sh -c "'$HELPER' escape-cgroup 60; exec '$HELPER' sleep 60" &
sup=$!
p=$(wait_event "escaped *" | cut -d' ' -f2)
kill -ALRM $sup
st=0
wait $sup || st=$?
[ $st = 124 ] || fail "exit $st, not 124"
alive "$p" && fail "the process that left the cgroup survived"

exit 0

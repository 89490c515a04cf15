#!/bin/sh
# A leaf left by a run killed as PID 1 of a container does not stay forever: the leaf names its
# owner by pid and start time, so the next run as PID 1 knows it for another run's.
. "$TOP_SRCDIR/tests/lib.sh"
cgroup_available || skip "no writable cgroup2 hierarchy (the cgroup tier needs root)"
command -v unshare >/dev/null 2>&1 && unshare -fp --mount-proc true 2>/dev/null || skip "no PID namespaces (unshare -p)"

# A run killed with its whole PID namespace (resmon-run as PID 1) leaves its leaf; a later run as
# PID 1 removes it once it is stale: the leaf names its owner by pid and start time. The run has no
# watchdog: one would see resmon-run's end before the kernel kills the namespace, and on a loaded
# machine it can stop the tree and remove the leaf in between, as it should.
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
# A cgroup of this test's own: every run looks for stale leaves where it starts, so another test's
# run beside this one, started in the suite's cgroup, would remove the leaf first (rightly so: it
# is stale). Runs started here are this test's alone.
parent="$mnt${own%/}/stale-leaf.$$"
mkdir "$parent" || fail "cannot make $parent"
trap '_s=$?; rmdir "$parent" 2>/dev/null; (exit $_s); _at_exit' EXIT
# in_parent CMD...: CMD started in $parent (exec: the background job's pid is unshare's)
in_parent() { exec sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$parent" "$@"; }
new_events
(in_parent unshare -fp --mount-proc "$RESMON_RUN" -q --no-profile --no-kill-leftovers --containment=cgroup -- "$HELPER" sleep 60) &
ns=$!
wait_event "ready *" >/dev/null
leaf=$(ls -d "$parent"/resmon-run.1.* 2>/dev/null | head -n 1)
[ -n "$leaf" ] || fail "no leaf of a run as PID 1 under $parent"
init=$(pgrep -P $ns | head -n 1) # resmon-run: PID 1 inside
[ -n "$init" ] || fail "no PID 1 under unshare $ns"
kill -KILL "$init" # its namespace dies with it
wait $ns 2>/dev/null
n=0
while [ -s "$leaf/cgroup.procs" ]; do # the namespace's processes die
    n=$((n + 1)); [ $n -lt 400 ] || fail "the killed namespace's processes stay"
    read -r -t 0.05 _ <&9 || :
done
[ -d "$leaf" ] || fail "the leaf of the killed run was removed by nobody expected to"
# A leaf is not stale before its owner has run a minute (STALE_AFTER_S): until the command is in
# it, it is empty, and its owner may be in another PID namespace, where its pid names another
# process. A second run as PID 1 now sees a young leaf whose PID 1 is not itself: it stays.
(in_parent unshare -fp --mount-proc "$RESMON_RUN" -q --no-profile --containment=cgroup -- true) ||
    fail "a second run as PID 1 failed"
[ -d "$leaf" ] || fail "a leaf younger than a minute was taken for stale"
# Older (its owner's start time a minute and more back, as the name tells), the leaf is stale.
hz=$(getconf CLK_TCK)
old_start=$(awk -v hz="$hz" '{ printf "%d", ($1 - 61) * hz }' /proc/uptime)
[ "$old_start" -gt 0 ] || skip "the machine has been up for less than a minute"
old="$parent/resmon-run.1.$old_start"
mv "$leaf" "$old" 2>/dev/null || { rmdir "$leaf"; mkdir "$old"; } || fail "cannot make $old"
(in_parent unshare -fp --mount-proc "$RESMON_RUN" -q --no-profile --containment=cgroup -- true) ||
    fail "a third run as PID 1 failed"
[ -d "$old" ] && fail "the stale leaf $old of a killed run as PID 1 is still there"
exit 0

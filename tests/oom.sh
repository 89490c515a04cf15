#!/bin/sh
# The kernel's OOM killer inside a small cgroup that resmon-run did not make (its own limit is
# tests/limits.sh's): the whole run is put in a memory cgroup of 48 MiB, as a CI container would
# be, and a process of the tree allocates past it. The kill is told from others (an "OOM kill"
# marker with the process, its memory and the test it ran under; the summary says it), and it is
# the run's end reason when the command itself was the victim. Every tier. Skipped where no
# memory cgroup can be made (not root, no memory controller).
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

[ "$(id -u)" = 0 ] || skip "needs root to make a memory cgroup"
grep -q '^oom_kill ' /proc/vmstat || skip "the kernel does not count OOM kills (/proc/vmstat oom_kill)"

# A memory cgroup of LIMIT bytes for the run: cgroup v1's memory hierarchy where it is mounted,
# else a cgroup v2 child with memory.max.
cg=""
v1=$(awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ { print $5; exit }' /proc/self/mountinfo)
v2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if [ -n "$v1" ] && [ -w "$v1" ]; then
    cg="$v1/resmon-oom-test.$$"
    mkdir "$cg" || skip "cannot make a cgroup under $v1"
    echo $((48 << 20)) >"$cg/memory.limit_in_bytes"
    [ -e "$cg/memory.memsw.limit_in_bytes" ] && echo $((48 << 20)) >"$cg/memory.memsw.limit_in_bytes"
elif [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
    grep -qw memory "$v2/cgroup.subtree_control" || echo +memory >"$v2/cgroup.subtree_control" 2>/dev/null
    cg="$v2/resmon-oom-test.$$"
    mkdir "$cg" || skip "cannot make a cgroup under $v2"
    [ -e "$cg/memory.max" ] || { rmdir "$cg"; skip "no memory controller for a cgroup under $v2"; }
    echo $((48 << 20)) >"$cg/memory.max"
    echo 0 >"$cg/memory.swap.max" 2>/dev/null || :
else
    skip "no memory cgroup can be made here"
fi
cleanup_cg() { [ -d "$cg" ] && rmdir "$cg" 2>/dev/null; :; }

# in_cg CMD...: run CMD with the run inside the small cgroup.
in_cg() {
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

tiers=subreaper
cgroup_available && tiers="$tiers cgroup"
for tier in $tiers; do
    R="$RESMON_RUN -i 0.05 --containment=$tier"

    # the command itself is the victim: its end reason is oom-kill; resmon-run dies of its KILL
    st=0
    in_cg $R -o "$T/root-$tier.json" -- sh -c "echo '{\"action\":\"test_start\",\"test\":\"big\"}'; exec '$HELPER' alloc 256 30" \
        >"$T/root.out" 2>"$T/root.err" || st=$?
    [ "$st" = 137 ] || { cleanup_cg; fail "$tier: OOM-killed command: exit $st: $(cat "$T/root.err")"; }
    c=$(markers "$T/root-$tier.json" command | cut -f5)
    [ "$(val "$c" reason)" = oom-kill ] || { cleanup_cg; fail "$tier: OOM-killed command: reason in $c"; }
    o=$(markers "$T/root-$tier.json" "OOM kill" | cut -f5)
    [ "$(val "$o" pid)" = "$(val "$c" pid)" ] || { cleanup_cg; fail "$tier: the OOM kill marker names another process: $o"; }
    [ "$(val "$o" test)" = big ] || { cleanup_cg; fail "$tier: the OOM kill marker does not name the test: $o"; }
    ge "$(val "$o" maxRSS)" $((30 << 20)) || { cleanup_cg; fail "$tier: OOM kill marker: its memory: $o"; }
    grep -q "was killed by the kernel's OOM killer" "$T/root.err" || { cleanup_cg; fail "$tier: summary headline: $(cat "$T/root.err")"; }
    grep -q "OOM killed" "$T/root.err" || { cleanup_cg; fail "$tier: no OOM line in the summary"; }

    # a child is the victim, the command goes on and exits 0: the kill is recorded, the reason
    # stays the command's own exit
    st=0
    in_cg $R -o "$T/child-$tier.json" -- sh -c "'$HELPER' alloc 256 30; echo after" >"$T/child.out" 2>"$T/child.err" || st=$?
    [ "$st" = 0 ] || { cleanup_cg; fail "$tier: OOM-killed child: exit $st: $(cat "$T/child.err")"; }
    grep -qx after "$T/child.out" || { cleanup_cg; fail "$tier: the command did not go on"; }
    c=$(markers "$T/child-$tier.json" command | cut -f5)
    [ "$(val "$c" reason)" = exit ] || { cleanup_cg; fail "$tier: OOM-killed child: reason in $c"; }
    o=$(markers "$T/child-$tier.json" "OOM kill" | cut -f5)
    # (named by its program when it died before its command line could be read: the OOM
    # killer may act within milliseconds of its exec, with resmon-run slowed by the same reclaim)
    case "$o" in *"alloc 256 30"* | *'helper (command line not read)'* | *'/helper"'*) ;;
    *) cleanup_cg; fail "$tier: no OOM kill marker for the child: $o; its processes:
$(markers "$T/child-$tier.json" process | cut -f5)
resmon-run said: $(cat "$T/child.err")" ;; esac
    grep -q "OOM killer killed process" "$T/child.err" || { cleanup_cg; fail "$tier: no warning at the kill"; }

    # a SIGKILL that is not the OOM killer's is not taken for one
    st=0
    in_cg $R -o "$T/kill-$tier.json" -- sh -c "'$HELPER' sleep 30 & p=\$!; sleep 0.2; kill -KILL \$p; wait" >/dev/null 2>&1 || st=$?
    [ "$(count "$T/kill-$tier.json" "OOM kill")" = 0 ] || { cleanup_cg; fail "$tier: a plain SIGKILL was taken for an OOM kill"; }
    echo "$tier: OOM kills of the command and of a child recorded; a plain KILL is not one"
done
cleanup_cg
exit 0

#!/bin/sh
# Processes the command leaves behind are stopped, in both containment tiers; a timeout reaches
# the whole tree (setsid escapers and double-forked daemons included).
. "$TOP_SRCDIR/tests/lib.sh"

tiers=subreaper
cgroup_available && tiers="$tiers cgroup"

for tier in $tiers; do
    R="$RESMON_RUN --no-profile --containment=$tier --grace=0.3"

    new_events
    expect_status 0 $R -- "$HELPER" daemon 60
    pid=$(wait_event "daemon *" | cut -d' ' -f2)
    alive "$pid" && fail "$tier: daemon $pid survived"

    new_events
    expect_status 0 $R -- "$HELPER" setsid-escape 60
    pid=$(wait_event "escaper *" | cut -d' ' -f2)
    alive "$pid" && fail "$tier: setsid escaper $pid survived"

    new_events
    expect_status 0 $R -- "$HELPER" term-ignorer 60
    pid=$(wait_event "ignorer *" | cut -d' ' -f2)
    alive "$pid" && fail "$tier: TERM ignorer $pid survived"

    new_events
    expect_status 0 $R -- "$HELPER" stopped 60
    pid=$(wait_event "stopped *" | cut -d' ' -f2)
    alive "$pid" && fail "$tier: stopped process $pid survived"

    # A fork bomb (capped) killed on timeout: nothing of it may remain. (Its last argument, which
    # the helper ignores, is this run's own: other tests, and other suites on the machine, have
    # fork bombs of their own.) The bomb dies of the TERM: -k leaves it the time a loaded machine
    # (a sanitizer's build, 300 processes on two CPUs) may take to run the signal's default action.
    expect_status 124 $R -t 0.5 -k 3 -- "$HELPER" forkbomb 301 "leftovers-$$-$tier"
    left=$(ps -eo pid=,args= | grep -c "[h]elper forkbomb 301 leftovers-$$-$tier" || true)
    [ "$left" -eq 0 ] || fail "$tier: $left forkbomb processes survived"

    # Timeout reaches a setsid escaper while the command still runs (the deadline once it has
    # left the command's process group: ALRM is resmon-run's timer).
    new_events
    $R -t 60 -- sh -c "'$HELPER' setsid-escape 60; exec '$HELPER' sleep 60" &
    sup=$!
    pid=$(wait_event "escaper *" | cut -d' ' -f2)
    kill -ALRM $sup
    st=0
    wait $sup || st=$?
    [ $st = 124 ] || fail "$tier: escaper: exit $st, not 124"
    alive "$pid" && fail "$tier: escaper $pid survived a timeout"

    # The tier in use is reported.
    msg=$($R -v -- true 2>&1)
    echo "$msg" | grep -q "containment: $tier" || fail "tier not reported: $msg"
done

# In timeout mode GNU's behaviour is kept: leftovers live on unless asked.
new_events
expect_status 0 "$TIMEOUT_LINK" 10 "$HELPER" daemon 60
pid=$(wait_event "daemon *" | cut -d' ' -f2)
alive "$pid" || fail "timeout mode killed a leftover"
kill "$pid"
new_events
expect_status 0 "$TIMEOUT_LINK" --kill-leftovers --grace=0.2 10 "$HELPER" daemon 60
pid=$(wait_event "daemon *" | cut -d' ' -f2)
alive "$pid" && fail "--kill-leftovers did not stop $pid"

# A child that existed before resmon-run (exec'ed by a shell with a background job) is not part
# of the command's tree: it is neither killed nor waited for.
for tier in $tiers; do
    new_events
    sh -c "'$HELPER' sleep 60 & exec '$RESMON_RUN' --no-profile --containment=$tier --grace=0.2 -- true"
    pid=$(wait_event "ready *" | cut -d' ' -f2)
    alive "$pid" || fail "$tier: a pre-existing child was killed as a leftover"
    kill "$pid"
done

# Once the command is reaped, its process group's id is free when no member is left in it (the
# leftover left it with setsid): the kernel may give that pid to a new process, which becomes a
# group of that id with setsid (a shell's job, a daemon, another run's command). The KILL passes
# must not reach it. The reuse is forced in a pid namespace of our own (ns_last_pid), root only:
# once the run says it is stopping its leftover (the command reaped), a stranger takes the pid,
# before the KILL pass that follows the grace (checked: the leftover is still alive then); or
# resmon-run is killed then, and its watchdog takes the tree down.
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    cat >"$T/reuse.sh" <<'EOS'
# in the pid namespace: $1 the tier, $2 end (the run ends) or crash (resmon-run is killed);
# says "stranger ok", "stranger killed" or "not reused ..."
ev() { # ev PATTERN: the next event matching it (fd 9)
    while read -r -t 60 _e <&9; do case $_e in $1) echo "$_e"; return 0 ;; esac; done
    echo "no event $1"; exit 1
}
"$RESMON_RUN" --no-profile --containment="$1" --grace=10 -v -- "$HELPER" escaped-ignorer 60 2>"$T/reuse-$1.err" &
sup=$!
root=$(ev "command *" | cut -d' ' -f2)
left=$(ev "escaped-ignorer *" | cut -d' ' -f2)
"$HELPER" wait-file "$T/reuse-$1.err" "left behind" &
ev "found *" >/dev/null
echo $((root - 1)) >/proc/sys/kernel/ns_last_pid
setsid "$HELPER" sleep 60 &
stranger=$!
state() { sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null; }
if [ "$stranger" != "$root" ] || [ "$(state "$left")" != S ]; then
    echo "not reused: command $root, stranger $stranger, leftover $left $(state "$left")"
    kill "$stranger" "$left" 2>/dev/null
    exit 0
fi
if [ "$2" = crash ]; then
    wd=$(pgrep -P "$sup" -x resmon-watchdog)
    kill -KILL "$sup"
    tail --pid="$wd" -s 0.01 -f /dev/null # the watchdog ends once it took the tree down
    [ "$(state "$left")" = "" ] || echo "the leftover $left survived the watchdog"
else
    wait "$sup"
fi
case $(state "$stranger") in S | R) echo "stranger ok" ;; *) echo "stranger killed: $(cat "$T/reuse-$1.err")" ;; esac
kill "$stranger" 2>/dev/null
EOS
    for tier in $tiers; do
        for how in end crash; do
            new_events
            said=$(T=$T HELPER=$HELPER unshare --pid --fork --mount-proc bash "$T/reuse.sh" "$tier" "$how")
            case $said in
            "stranger ok") echo "$tier, $how: a reused group id after the command's end: the stranger was not killed" ;;
            "not reused"*) echo "$tier, $how: SKIPPED the reused group id: $said" ;;
            *) fail "$tier, $how: a reused group id: $said" ;;
            esac
        done
    done
else
    echo "SKIPPED the reused group id: it needs root and a pid namespace"
fi

# No zombie is left: every child was reaped (the command's group is gone too).
exit 0

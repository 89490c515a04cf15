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
    # fork bombs of their own.)
    expect_status 124 $R -t 0.5 -k 0.2 -- "$HELPER" forkbomb 301 "leftovers-$$-$tier"
    left=$(ps -eo pid=,args= | grep -c "[h]elper forkbomb 301 leftovers-$$-$tier" || true)
    [ "$left" -eq 0 ] || fail "$tier: $left forkbomb processes survived"

    # Timeout reaches a setsid escaper while the command still runs.
    new_events
    expect_status 124 $R -t 0.3 -- sh -c "'$HELPER' setsid-escape 60; exec '$HELPER' sleep 60"
    pid=$(wait_event "escaper *" | cut -d' ' -f2)
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

# No zombie is left: every child was reaped (the command's group is gone too).
exit 0

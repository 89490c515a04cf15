#!/bin/sh
# Nothing lost, nothing left, as CI runs resmon-run: under other supervisors, with a hostile
# command, with signals of every kind, with its stdout gone. In both tiers where the cgroup one
# exists (as root); the subreaper tier always.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

tiers=subreaper
cgroup_available && tiers="$tiers cgroup"

# wait_gone PID...: until none of them is alive (bounded: 20 s; an event-less wait on processes
# that are not ours to wait for).
wait_gone() {
    _n=0
    for _p in "$@"; do
        while alive "$_p"; do
            _n=$((_n + 1))
            [ $_n -lt 400 ] || fail "process $_p survived"
            read -r -t 0.05 _ <&9 || :
        done
    done
}

# seccomp_mode PID: the Seccomp field of its status (2: a filter).
seccomp_mode() { sed -n 's/^Seccomp:[[:space:]]*//p' "/proc/$1/status"; }

for tier in $tiers; do
    R="$RESMON_RUN -q --containment=$tier"

    # Nested supervisors: the outer timeout's signal reaches the inner supervisor, not its command
    # (GNU timeout signals its command's process group; the inner run's command has its own).
    # The outer one times out once the command is ready (ALRM is its timer, as GNU timeout's).
    new_events
    "$TIMEOUT_LINK" --containment=$tier -s ALRM 25 \
        "$TIMEOUT_LINK" --containment=$tier -s USR1 25 "$HELPER" all-signals 30 &
    sup=$!
    wait_event "ready *" >/dev/null
    kill -ALRM $sup
    st=0
    wait $sup || st=$?
    [ $st = 124 ] || fail "$tier: nested: exit $st, not 124"
    ev=$(wait_event "signal *")
    [ "$ev" = "signal 10" ] || fail "$tier: nested: the command got '$ev', not the inner USR1"

    # Three levels: every profile is finalized (each level's TERM reaches the next once).
    expect_status 124 $R -t 0.5 -o "$T/nest1-$tier.json" -- $R -o "$T/nest2-$tier.json" -- \
        $R -o "$T/nest3-$tier.json" -- "$HELPER" sleep 60
    for k in 1 2 3; do
        [ "$(head -c 8 "$T/nest$k-$tier.json")" = '{"meta":' ] || fail "$tier: nested level $k left a stream"
    done

    # Under GNU timeout (TERM to us, then to our group): one stop request, not two. The command's
    # TERM handler runs to its end; nothing is killed.
    if command -v timeout >/dev/null 2>&1; then
        new_events
        timeout -s TERM -k 60 60 $R -o "$T/gnu-$tier.json" -- "$HELPER" slow-term 300 &
        sup=$!
        wait_event "ready *" >/dev/null
        kill -ALRM $sup # GNU timeout's timer (its own SIGALRM)
        wait_event "term" >/dev/null
        wait_event "cleaned up" >/dev/null
        wait $sup
        st=$?
        [ $st = 124 ] || fail "$tier: under GNU timeout: status $st"
        [ "$(count "$T/gnu-$tier.json" kill)" = 1 ] || fail "$tier: under GNU timeout: $(markers "$T/gnu-$tier.json" kill)"
    fi

    # Every catchable terminating signal is a stop request: the profile is finalized, the command
    # gets the signal (and here exits 0 of it), resmon-run exits as its command did.
    for sig in USR1 USR2 XCPU VTALRM PROF RTMIN; do
        new_events
        P="$T/sig-$sig-$tier.json"
        $R -o "$P" -- "$HELPER" all-signals 30 >/dev/null 2>&1 &
        sup=$!
        wait_event "ready *" >/dev/null
        kill -$sig $sup
        wait_event "signal *" >/dev/null
        wait $sup
        st=$?
        [ "$(head -c 8 "$P")" = '{"meta":' ] || fail "$tier: $sig: the profile is not finalized"
        [ $st = 0 ] || fail "$tier: $sig: status $st"
        [ "$(val "$(markers "$P" command | cut -f5)" reason)" = stopped ] || fail "$tier: $sig: $(markers "$P" command)"
    done

    # The watchdog holds its socket, /dev/null on 0-2 and (cgroup tier) the cgroup's directories,
    # nothing of resmon-run's (a pipe's write end or the stream kept open there would outlive
    # resmon-run). It takes its name once it has closed the rest. The profile found at the path
    # is removed, and its last close, which frees it, is the watchdog's (watchdog_close): no one
    # holds it for the run.
    new_events
    echo "an old profile" >"$T/wd-$tier.json"
    $R -o "$T/wd-$tier.json" -- "$HELPER" sleep 60 >/dev/null 2>&1 &
    sup=$!
    wait_event "ready *" >/dev/null
    n=0
    while ! wd=$(pgrep -P $sup -x resmon-watchdog); do
        n=$((n + 1)); [ $n -lt 400 ] || fail "$tier: no watchdog named resmon-watchdog"
        read -r -t 0.05 _ <&9 || :
    done
    # It shares resmon-run's memory, and so its privacy (sandbox.h): only root lists its
    # descriptors; to its own user they are closed like resmon-run's.
    if ! ls /proc/$wd/fd >/dev/null 2>&1; then
        [ "$(id -u)" != 0 ] || fail "$tier: root cannot list the watchdog's descriptors"
        ! ls /proc/$sup/fd >/dev/null 2>&1 || fail "$tier: the watchdog is private, resmon-run is not"
    fi
    sockets=1 others=""
    ! ls /proc/$wd/fd >/dev/null 2>&1 || sockets=0
    for f in /proc/$wd/fd/*; do
        t=$(readlink "$f") || continue
        case $t in
        /dev/null) ;;
        socket:*) sockets=$((sockets + 1)) ;;
        "$T/wd-$tier.json (deleted)") ;; # the old profile, until the watchdog has closed it
        *) [ "$tier" = cgroup ] && [ -d "$t" ] || others="$others ${f##*/}:$t" ;;
        esac
    done
    [ $sockets = 1 ] && [ -z "$others" ] || fail "$tier: the watchdog holds $sockets sockets and$others"
    if ls /proc/$sup/fd >/dev/null 2>&1; then
        n=0
        while ls -l /proc/$sup/fd/ /proc/$wd/fd/ 2>/dev/null | grep -q "wd-$tier.json (deleted)"; do
            n=$((n + 1)); [ $n -lt 400 ] || fail "$tier: the old profile is still held: $(ls -l /proc/$sup/fd/ /proc/$wd/fd/)"
            read -r -t 0.05 _ <&9 || :
        done
    fi
    # Sharing resmon-run's memory, it would be the way out of the lock-down: it has a filter of its
    # own, in place before resmon-run's (sandbox.h).
    n=0
    while [ "$(seccomp_mode $sup)" != 2 ]; do
        n=$((n + 1)); [ $n -lt 400 ] || fail "$tier: resmon-run never locked down"
        read -r -t 0.05 _ <&9 || :
    done
    [ "$(seccomp_mode $wd)" = 2 ] || fail "$tier: resmon-run is locked down, its watchdog has seccomp mode $(seccomp_mode $wd)"
    kill $sup
    wait $sup

    # The command kills resmon-run outright: what it started dies with it (the watchdog).
    new_events
    $R --grace 0.2 -o "$T/killed-$tier.json" -- sh -c "echo \$\$ >'$T/killer'; '$HELPER' daemon 60; \
        '$HELPER' setsid-escape 60; kill -9 \$PPID; exec '$HELPER' sleep 60" >/dev/null 2>&1 &
    sup=$!
    d=$(wait_event "daemon *" | cut -d' ' -f2)
    e=$(wait_event "escaper *" | cut -d' ' -f2)
    wait $sup 2>/dev/null
    wait_gone "$d" "$e" "$(cat "$T/killer")"
    # ... and a process that ignores TERM dies at once, not after the grace (30 s here, longer
    # than wait_gone waits): a KILL to resmon-run is the last word.
    new_events
    rm -f "$T/kgo"; mkfifo "$T/kgo"
    $R --grace 30 --no-profile -- sh -c "'$HELPER' ignore-term 60 & read x <'$T/kgo'; kill -9 \$PPID; wait" \
        >/dev/null 2>&1 &
    sup=$!
    i=$(wait_event "ready *" | cut -d' ' -f2)
    echo go >"$T/kgo"
    wait $sup 2>/dev/null
    wait_gone "$i"

    # A supervisor stopped for a while does not take the command for silent: output waiting in
    # the pipe is read before deciding.
    new_events
    $R --no-profile --output-timeout 1 -- "$HELPER" tick 40 0.05 >/dev/null &
    sup=$!
    read -r -t 0.3 _ <&9 || :
    kill -STOP $sup
    read -r -t 1.5 _ <&9 || : # the scenario: stopped for 1.5 s while the command prints
    kill -CONT $sup
    wait $sup
    st=$?
    [ $st = 0 ] || fail "$tier: stopped supervisor: status $st (a false output timeout)"

    # A stopped command still gets the timeout signal: CONT follows it.
    expect_status 124 timeout -k 10 20 $R --no-profile -t 0.3 -- sh -c 'kill -STOP $$; exec sleep 60'

    # A fork bomb left behind that ignores TERM: KILL passes until none is left (one pass would
    # miss what forks meanwhile).
    new_events
    FORKBOMB_IGNORE_TERM=1 expect_status 0 $R --no-profile --grace 0.2 -- sh -c \
        "setsid '$HELPER' forkbomb 302 robust-$$-$tier & '$HELPER' wait-file /proc/self/status Name; exit 0"
    n=0
    while [ "$(ps -eo args= | grep -c "[h]elper forkbomb 302 robust-$$-$tier")" != 0 ]; do
        n=$((n + 1)); [ $n -lt 100 ] || fail "$tier: the fork bomb left behind survived"
        read -r -t 0.05 _ <&9 || :
    done

    # stdout gone (| head -1): the command gets SIGPIPE at a write after we have seen the reader
    # go, as without us. A write that lands in our pipe before we notice cannot fail any more:
    # the command writes until one does (yes), which is when a real harness would see it too.
    new_events
    F="$T/go-$tier"
    start=$(date +%s)
    { $R -o "$T/epipe-$tier.json" -- sh -c "echo a; '$HELPER' wait-file '$F' go; exec yes b"
      echo $? >"$T/epipe-st"; } | { head -1 >/dev/null; exec 0<&-; echo go >"$F"; }
    st=$(cat "$T/epipe-st")
    [ "$st" = 141 ] || fail "$tier: stdout gone: status $st"
    [ $(( $(date +%s) - start )) -lt 20 ] || fail "$tier: stdout gone: the command ran on"
done

# A file-size limit: resmon-run does not die of SIGXFSZ; the output passes through whole; it says
# the stream could not be written.
mkdir -p "$T/raw"
n=$(sh -c "ulimit -f 64; exec $RESMON_RUN -o '$T/raw/fsize.json' -- sh -c 'i=0; while [ \$i -lt 3000 ]; do
    echo \"{\\\"action\\\":\\\"test_start\\\",\\\"test\\\":\\\"t\$i\\\"}\"; echo \"{\\\"action\\\":\\\"test_end\\\",\\\"test\\\":\\\"t\$i\\\",\\\"status\\\":\\\"PASS\\\"}\"; i=\$((i + 1)); done'" \
    2>"$T/fsize.err" | wc -l) || true
[ "$n" = 6000 ] || fail "file-size limit: $n lines of 6000 passed through: $(cat "$T/fsize.err")"
grep -q "File too large" "$T/fsize.err" || fail "file-size limit: not said: $(cat "$T/fsize.err")"
exit 0

#!/bin/sh
# Every kind of profile resmon-run writes, loaded by the Firefox Profiler's own import code
# (../shared/ffprof, through tests/frontend-check.cjs), and what a user must see there: a normal
# run, each stop (own timeout, output timeout, TERM, INT, the parent's death, the timeout form
# with -o) both as it stands at the stop signal and at the end, a killed run's recovered stream, a
# run past the marker limit, every test-log format, a gzip profile. Skips without node or the
# loader (a release tarball); lib.sh's end-of-test check still loads whatever else a test leaves.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
frontend_available || skip "node or $FFPROF is missing"

# facts FILE [FFCHECK_LABELS]: the front-end's facts line and labels of FILE (fails the test when
# it does not load as a user must see it).
facts() {
    FFCHECK_LABELS=${2:-} frontend "$1" || fail "$1: the front-end does not show it as it must"
}

# The machine's and the tree's CPU and memory are counter tracks, each drawn once: no marker graph
# of the same name beside it. Pressure (where the kernel keeps it) and the tree's major faults are
# counters too. The tracks are named for what they measure (the counters keep their names) and go
# in the order someone looking into a stop wants them: the tree's CPU and memory first, then the
# machine's (frontend-check.cjs: a counter that stayed at zero is hidden, the others shown).
expect_counters() {
    _facts=$1 _what=$2
    case "$_facts" in *" counters=CPU Use|Memory|Tree CPU|Tree Memory|Tree Major Faults"[\ \|]*) ;;
    *) fail "$_what: counters: $_facts" ;; esac
    want="Tree CPU|Tree Memory|Machine CPU|Machine Memory|Tree Major Faults"
    if [ -r /proc/pressure/memory ]; then
        case "$_facts" in *"|Tree Major Faults|CPU Pressure|Memory Pressure|IO Pressure"[\ \|]*) ;;
        *) fail "$_what: no pressure counters: $_facts" ;; esac
        want="$want|Machine CPU Pressure|Machine Memory Pressure|Machine IO Pressure"
    fi
    tracks=$(printf '%s\n' "$_facts" | sed 's/.* tracks=\(.*\) types=.*/\1/')
    printf '%s\n' "$want" | tr '|' '\n' >"$T/.want"
    while IFS= read -r t; do
        n=$(printf '%s\n' "$tracks" | tr '|' '\n' | grep -cx "$t")
        [ "$n" = 1 ] || fail "$_what: $n tracks named '$t': $tracks"
    done <"$T/.want"
    # (of those shown: one that stayed at zero, as the tree's CPU in a short run measured in
    # clock ticks, is hidden)
    ranks=$(printf '%s\n' "${tracks%%|Tracks that stayed at zero|*}" | tr '|' '\n' | awk '
        $0 == "Tree CPU" { print 1 } $0 == "Tree Memory" { print 2 }
        $0 == "Machine CPU" { print 3 } $0 == "Machine Memory" { print 4 }' | tr '\n' ' ')
    [ "$ranks" = "$(printf '%s\n' $ranks | sort -n | tr '\n' ' ')" ] || fail "$_what: the tracks are not in order: $tracks"
    case "$tracks" in *"resmon-run|Tree "*) ;; *) fail "$_what: the tree's tracks do not come first: $tracks" ;; esac
    # the run's thread first (then, after a stop, one per process dumped)
    case "$_facts" in *" threads=resmon-run "* | *" threads=resmon-run|"*) ;; *) fail "$_what: the thread has no name: $_facts" ;; esac
}

# wait_samples STREAM N: until the stream holds N samples of the tree (bounded: 20 s).
wait_samples() {
    _n=0
    while [ "$(cat "$1" 2>/dev/null | grep -c '"type":"marker","name":"Tree CPU"')" -lt "$2" ]; do
        _n=$((_n + 1))
        [ $_n -lt 400 ] || fail "$1: no samples reach the stream"
        read -r -t 0.05 _ <&9 || :
    done
}

# wait_tree_cpu STREAM FROM MS: until the tree's CPU time in the stream's samples after the first
# FROM adds up to MS (bounded: 20 s); the CPU a loaded machine gives, not the wall time, is what
# a burning test's cost is made of.
wait_tree_cpu() {
    _n=0
    while ! grep '"type":"marker","name":"Tree CPU"' "$1" 2>/dev/null | tail -n +"$(($2 + 1))" |
        sed -n 's/.*"cpuTime":\([0-9.]*\).*/\1/p' | awk -v ms="$3" '{ s += $1 } END { exit !(s >= ms) }'; do
        _n=$((_n + 1))
        [ $_n -lt 400 ] || fail "$1: the tree's CPU time does not reach $3 ms in the stream"
        read -r -t 0.05 _ <&9 || :
    done
}

# ---- the first interval of every counter: a normal, a stopped and a recovered run --------------
# The tree burns CPU from its start, sampled every 200 ms: a lost first interval is a third of it.
P="$T/first-normal.json"
"$RESMON_RUN" -q -i 0.2 -o "$P" -- "$HELPER" burn 0.6 || fail "first-interval run failed"
facts "$P" >/dev/null
first_interval "$P" normal
P="$T/first-stopped.json"
"$RESMON_RUN" -q -i 0.2 -t 0.7 -o "$P" -- "$HELPER" burn 30
[ $? = 124 ] || fail "first-interval: the timeout did not stop the run"
facts "$P" >/dev/null
first_interval "$P" stopped
S="$T/first-killed.json"
"$RESMON_RUN" -q -i 0.2 -o "$S" -- "$HELPER" burn 30 &
sup=$!
wait_samples "$S" 3
kill -KILL $sup
wait $sup 2>/dev/null
"$RESMON_RUN" --recover "$S" -o "$T/first-recovered.json" 2>/dev/null || fail "first-interval: recover failed"
f=$(facts "$T/first-recovered.json" Command)
first_interval "$T/first-recovered.json" recovered
# the command was cut off where the record ends, not "still running"
case "$f" in *"Exit (exit, string)=unknown: the record was cut off at "*" s;"*"Ended by (reason, string)=cut-off"*) ;;
*) fail "recovered: the command does not say it was cut off: $f" ;; esac
n=$(markers "$T/first-recovered.json" command | grep -c 'still running')
[ "$n" = 0 ] || fail "recovered: the command still reads as running"

# ---- a normal run ------------------------------------------------------------------------------
P="$T/normal.json"
"$RESMON_RUN" -q -i 0.05 -o "$P" -- "$HELPER" alloc 40 0.3 || fail "normal run failed"
f=$(facts "$P" Command)
expect_counters "$f" normal
case "$f" in *"Ended by (reason, string)=exit"*) ;; *) fail "normal: the command's reason: $f" ;; esac
# The run's own thread is the process's track, named resmon-run, without a bar across the whole run
# in the timeline (the command, drawn there in the default black); the tree's major faults, usually
# none in this run, are hidden with the other counters that stayed at zero. (A page read back
# from disk, a sanitizer's build on a loaded machine, is a fault: then the track is shown, as
# frontend-check holds a counter that measured something to.)
case "$f" in *" tracks=resmon-run|"*) ;; *) fail "normal: the run's track: $f" ;; esac
case "$f" in
*" hidden=Tracks that stayed at zero|"*"Tree Major Faults"*) ;;
*" hidden="*"Tree Major Faults"*) fail "normal: major faults hidden, but not with the counters that stayed at zero: $f" ;;
*" hidden=Tracks that stayed at zero|"*) echo "normal: the tree had major faults this time, and their track is shown" ;;
*) fail "normal: no group of the counters that stayed at zero: $f" ;;
esac
node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const s = p.meta.markerSchema.find((s) => s.name === "Command");
if (s.display.includes("timeline-overview")) process.exit(1);
' "$P" || fail "normal: the command is drawn across the timeline's overview"
case "$f" in *"Tree CPU time (cpuTime, duration)="*"Tree peak RSS (sampled) (maxRSS, bytes)="*) ;;
*) fail "normal: the command marker lacks the tree's CPU and peak: $f" ;; esac
# The counters hold the figures the markers hold: the tree's memory reaches the 40 MiB allocated.
peak=$(maxof "$P" "Tree Memory" rss)
ge "$peak" 41943040 || fail "normal: Tree Memory markers peak at $peak"
node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const c = p.counters.find((c) => c.name === "Tree Memory").sampleGroups[0].samples;
let level = 0, peak = 0;
for (const x of c.count) { level += x; peak = Math.max(peak, level); }
if (Math.abs(peak - Number(process.argv[2])) > 0.5) { console.error(`counter peak ${peak}, markers ${process.argv[2]}`); process.exit(1); }
const cpu = p.counters.find((c) => c.name === "Tree CPU").sampleGroups[0].samples;
const sum = cpu.count.reduce((a, b) => a + b, 0);
if (sum <= 0) { console.error("no tree CPU"); process.exit(1); }
' "$P" "$peak" || fail "normal: the counters do not hold the markers' figures"

# ---- each stop: the profile at the stop signal and the final one -------------------------------
export HELPER_KEEP_AT_SIGNAL=1
for how in timeout output-timeout TERM INT parent timeout-form; do
    P="$T/stop-$how.json"
    new_events
    case $how in
    timeout) "$RESMON_RUN" -q -i 0.05 -t 30 -o "$P" -- "$HELPER" sigcheck "$P" 30 >/dev/null 2>&1 & ;;
    output-timeout) "$RESMON_RUN" -q -i 0.05 --output-timeout 1 -o "$P" -- "$HELPER" sigcheck "$P" 30 >/dev/null 2>&1 & ;;
    TERM | INT) "$RESMON_RUN" -q -i 0.05 -o "$P" -- "$HELPER" sigcheck "$P" 30 >/dev/null 2>&1 & ;;
    timeout-form) "$TIMEOUT_LINK" -o "$P" 30 "$HELPER" sigcheck "$P" 30 >/dev/null 2>&1 & ;;
    parent)
        # the parent is a shell that dies while resmon-run runs
        sh -c '"$@" & echo $! >"$0.pid"; exec sleep 60' "$T/parent" "$RESMON_RUN" -q -i 0.05 -o "$P" -- \
            "$HELPER" sigcheck "$P" 30 >/dev/null 2>&1 &
        ;;
    esac
    sup=$!
    wait_event "ready *" >/dev/null
    [ $how = timeout-form ] || wait_samples "$P" 3 # (no sampling there)
    case $how in
    timeout | timeout-form) kill -ALRM "$sup" ;;
    output-timeout) ;; # the helper prints nothing more
    TERM | INT) kill -"$how" "$sup" ;;
    parent) kill -KILL "$sup" ;;
    esac
    wait_event "saw *" >/dev/null
    if [ $how = parent ]; then
        rpid=$(cat "$T/parent.pid")
        n=0
        while alive "$rpid"; do
            n=$((n + 1))
            [ $n -lt 400 ] || fail "parent: resmon-run did not end"
            read -r -t 0.05 _ <&9 || :
        done
    else
        wait "$sup"
    fi
    [ -s "$P.at-signal" ] || fail "$how: nothing at the stop signal"
    for F in "$P.at-signal" "$P"; do
        f=$(facts "$F" Timeout,Command,KillStep)
        [ $how = timeout-form ] || expect_counters "$f" "$how $F"
        case "$f" in *"label Timeout:timeout: "*"Open tests (openTests, list)=[list] [\"stop/open-test.js\"]"*) ;;
        *) fail "$how $F: the timeout marker does not name the open test: $f" ;; esac
        case "$f" in *"Live processes (liveProcesses, table)=[table] [["*) ;;
        *) fail "$how $F: the timeout marker does not list live processes: $f" ;; esac
        # what the helper was doing: a thread of its own, the marker of its dump (not as
        # resmon-timeout, where the dump is off unless asked)
        if [ $how = timeout-form ]; then
            case "$f" in *" threads=resmon-run|helper"*) fail "$how $F: resmon-timeout dumped: $f" ;; esac
        else
            case "$f" in *"ProcessDump:"*" threads=resmon-run|helper"[\ \|]*) ;;
            *) fail "$how $F: the dumped helper is not shown: $f" ;; esac
        fi
    done
    # At the signal the command still ran: its marker says so; at the end it says why it ended.
    f=$(facts "$P.at-signal" Command)
    case "$f" in *"Ended by (reason, string)=running"*) ;; *) fail "$how: the stop-time command marker: $f" ;; esac
    f=$(facts "$P" Command,KillStep)
    want=$how
    case $how in TERM | INT) want=stopped ;; parent) want=parent-died ;; timeout-form) want=timeout ;; esac
    case "$f" in *"Ended by (reason, string)=$want"*) ;; *) fail "$how: the command marker's reason: $f" ;; esac
    case "$f" in *"label KillStep:kill: kill: "*" | "*" ("*"), processes signalled: "[0-9]*) ;; *) fail "$how: kill steps: $f" ;; esac
    # The test still running is there as what it became: in the profile at the stop signal (what
    # a CI that kills the run now keeps) and in the final one.
    for F in "$P.at-signal" "$P"; do
        expect_test "$F" stop/open-test.js "$([ $how = timeout ] || [ $how = output-timeout ] || [ $how = timeout-form ] && echo TIMEOUT || echo INCOMPLETE)" \
            "$([ $how = timeout ] || [ $how = output-timeout ] || [ $how = timeout-form ] && echo purple || echo orange)"
    done
done
unset HELPER_KEEP_AT_SIGNAL

# ---- a killed run, recovered -------------------------------------------------------------------
# Killed in the middle of a test: the recovered profile still has the command, the root process,
# the open test (with what the tree's counters say it cost) and a phase the command left open.
S="$T/killed.json"
new_events
"$RESMON_RUN" -q -i 0.02 -o "$S" -- sh -c '"$0" --mark phase-begin build; exec "$1" steps 3 0.3' \
    "$RESMON_RUN" "$HELPER" >/dev/null 2>&1 &
sup=$!
wait_event "step 3" >/dev/null
# let samples of the open test worth 100 ms of its CPU reach the stream (it burns for 300 ms)
wait_tree_cpu "$S" "$(grep -c '"type":"marker","name":"Tree CPU"' "$S")" 100
kill -KILL $sup
wait $sup 2>/dev/null
"$RESMON_RUN" --recover "$S" -o "$T/recovered.json" 2>/dev/null || fail "recover failed"
f=$(facts "$T/recovered.json" Command,Phase,Process)
expect_counters "$f" recovered
case "$f" in *"label Command:command: "*"Ended by (reason, string)=cut-off"*) ;; *) fail "recovered: no command marker: $f" ;; esac
root=$(markers "$T/recovered.json" process | grep -F '"cmd":"sh -c ')
[ -n "$root" ] || fail "recovered: no process marker for the root, which still ran: $(markers "$T/recovered.json" process)"
ph=$(markers "$T/recovered.json" Phase | cut -f5)
case "$ph" in *'"phase":"build"'*'"cpuTime":'*'"cpuPercent":"'*) ;; *) fail "recovered: the open phase has no CPU time: $ph" ;; esac
t=$(test_line "$T/recovered.json" steps/test_1.js | cut -f5)
case "$t" in *'"status":"INCOMPLETE"'*'"cpuTime":'*) ;; *) fail "recovered: the open test: $t" ;; esac
cpu=$(printf '%s\n' "$t" | sed 's/.*"cpuTime":\([0-9.]*\).*/\1/')
ge "$cpu" 50 || fail "recovered: the open test burned for 300 ms but cost $cpu ms"
case "$f" in *"CPU Time (cpuTime, duration)= ()"*|*"CPU time:  ()"*) fail "recovered: an empty CPU label: $f" ;; esac

# ---- failures, readable ------------------------------------------------------------------------
# A failure's message of several lines is shown line by line; an expected failure says so; a hung
# test is not coloured as a skipped one; every unexpected result is an instant in a row of its own
# (a failing test shorter than a pixel is still there to hover).
L="$T/failures.log"
echo '{"action":"suite_start","time":1767225600000,"tests":{}}' >"$L"
for t in pass:PASS:PASS skip:SKIP:SKIP xfail:FAIL:FAIL fail:FAIL:PASS hang:TIMEOUT:PASS; do
    n=${t%%:*} ex=${t##*:} st=${t#*:} st=${st%:*} msg=
    [ $n = fail ] && msg=',"message":"assert a == b\n- 1\n+ 2"'
    printf '{"action":"test_start","time":1767225600001,"test":"f/%s.js"}\n' $n >>"$L"
    printf '{"action":"test_end","time":1767225600002,"test":"f/%s.js","status":"%s","expected":"%s"%s}\n' \
        $n $st $ex "$msg" >>"$L"
done
P="$T/failures.json"
"$RESMON_RUN" -q -i 0.05 -o "$P" -- cat "$L" >/dev/null || fail "failures run failed"
f=$(FFPROF_SAMPLES=10 facts "$P" Test,TestResult)
case "$f" in *"label Test:test: fail.js | FAIL — f/fail.js |"*'Message, line by line (messageLines, list)=[list] ["assert a == b","- 1","+ 2"]'*) ;;
*) fail "failures: the message is not shown line by line: $f" ;; esac
case "$f" in *"label Test:test: xfail.js | "*"Outcome (outcome, string)=expected failure"*) ;;
*) fail "failures: the expected failure does not say so: $f" ;; esac
case "$f" in *" colors="*"Test:green/orange/purple/yellow,"*) ;; *) fail "failures: TIMEOUT's colour is SKIP's: $f" ;; esac
case "$f" in *" rows="*"Other / unexpected result (2)"*) ;; *) fail "failures: no row of unexpected results: $f" ;; esac
case "$f" in *"label TestResult:unexpected result: TIMEOUT: f/hang.js"*) ;; *) fail "failures: the hung test's result: $f" ;; esac

# A hung TAP test: TAP prints a test only with its result, so none is open; the stop names the
# one running by what came before it.
P="$T/tap-hang.json"
new_events
"$RESMON_RUN" -q -i 0.05 -o "$P" -- sh -c 'printf "1..3\nok 1 - first\nok 2 - second\n# 3 hangs\n"
    "$0" wait-file "$1" "\"test\":\"second\"" && exec "$0" sleep 30' "$HELPER" "$P" >/dev/null 2>&1 &
sup=$!
wait_event "found *" >/dev/null
wait_event "ready *" >/dev/null
kill -ALRM $sup
wait $sup
f=$(facts "$P" Timeout)
case "$f" in *'Open tests (openTests, list)=[list] ["after 2, second"]'*) ;; *) fail "tap hang: open tests: $f" ;; esac

# ---- past the marker limit ---------------------------------------------------------------------
P="$T/limit.json"
awk 'BEGIN { for (i = 0; i < 300; i++) {
    printf "{\"action\":\"test_start\",\"test\":\"lim/t%d.js\"}\n", i
    printf "{\"action\":\"test_end\",\"test\":\"lim/t%d.js\",\"status\":\"PASS\"}\n", i } }' >"$T/limit.log"
"$RESMON_RUN" -q -i 0 --max-markers 50 -o "$P" -- cat "$T/limit.log" >/dev/null 2>&1 || fail "limit run failed"
f=$(facts "$P" Warning)
case "$f" in *"label Warning:markers left out: "*"were left out"*) ;; *) fail "limit: no warning: $f" ;; esac

# ---- every test-log format ---------------------------------------------------------------------
for log in "$TOP_SRCDIR"/tests/fixtures/testlog/*.txt "$TOP_SRCDIR"/tests/fixtures/testlog/*.log; do
    name=$(basename "$log")
    P="$T/format-$name.json"
    "$RESMON_RUN" -q -i 0.05 -o "$P" -- cat "$log" >/dev/null 2>&1 || fail "$name: run failed"
    f=$(facts "$P")
    case "$f" in *"Test:"*) ;; *) fail "$name: no test marker in the front-end: $f" ;; esac
done

# ---- gzip --------------------------------------------------------------------------------------
P="$T/zipped.json.gz"
"$RESMON_RUN" -q -i 0.05 -o "$P" -- "$HELPER" burn 0.2 || fail "gzip run failed"
[ "$(od -An -tx1 -N2 "$P" | tr -d ' ')" = 1f8b ] || fail "-o FILE.gz is not gzip"
f=$(facts "$P")
expect_counters "$f" gzip
"$RESMON_RUN" --recover "$P" 2>&1 | grep -q "already a full profile" || fail "--recover of a gzip profile"
"$RESMON_RUN" -q -i 0.05 --gzip -o "$T/zipped2.json" -- true || fail "--gzip run failed"
[ "$(od -An -tx1 -N2 "$T/zipped2.json" | tr -d ' ')" = 1f8b ] || fail "--gzip is not gzip"
echo "every kind of profile loads in the front-end as it must"

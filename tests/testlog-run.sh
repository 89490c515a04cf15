#!/bin/sh
# Test logs end to end: the same small suite in mozlog, TBPL, TAP, GoogleTest and go test -json
# form becomes test markers with the right status and colour, each with what the tree spent while
# it ran; mixed formats, interleaved tests, stderr, huge lines and binary garbage, --parse=none,
# a test hanging at the timeout; markers the command records with resmon-run --mark.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
BURN=0.3

# cost_check FILE ID [rss|no-rss [NAME]]: the test marker of ID lasted about as long as the helper
# measured for its test NAME (default ID) (±20% + 50 ms) and carries the tree CPU the helper burnt
# meanwhile (±20% + 5 ms) and maxRSS (no-rss: and no maxRSS, the peak of a window longer than the
# test not being its own).
cost_check() {
    _rss=${3:-rss}
    _l=$(test_line "$1" "$2")
    _d=$(printf '%s\n' "$_l" | cut -f5)
    set -- "$1" "$2" $(grep -F "${4:-$2} " "$HELPER_COSTS" | tail -n 1 | sed 's/.* \([0-9.]*\) \([0-9.]*\)$/\1 \2/')
    [ $# = 4 ] || fail "no cost reported for $2"
    _dur=$(duration "$_l")
    near "$_dur" "$3" 0.2 50 || fail "$1: test '$2' lasted $_dur ms, the helper measured $3 ms"
    _cpu=$(val "$_d" cpuTime)
    [ -n "$_cpu" ] || fail "$1: test '$2' has no cpuTime: $_d"
    near "$_cpu" "$4" 0.2 5 || fail "$1: test '$2' cpuTime $_cpu ms, the helper burnt $4 ms"
    if [ "$_rss" = rss ]; then
        has_key "$_d" maxRSS || fail "$1: test '$2' has no maxRSS: $_d"
    else
        ! has_key "$_d" maxRSS || fail "$1: test '$2' has a maxRSS it cannot know: $_d"
    fi
    echo "$2: ${_dur} ms (helper: $3 ms), cpuTime $_cpu ms (helper: $4 ms)"
}

# suite_run FORM [FD]: run the suite; the profile is $T/FORM.json.
suite_run() {
    HELPER_COSTS="$T/costs.$1"
    export HELPER_COSTS
    rm -f "$HELPER_COSTS"
    "$RESMON_RUN" -i 0.05 -o "$T/$1.json" -- "$HELPER" suite "$1" $BURN ${2:-1} >"$T/$1.out" 2>"$T/$1.err" ||
        fail "$1 suite: run failed: $(cat "$T/$1.err")"
    "$CHECK" "$T/$1.json" || fail "$1 suite: invalid profile"
}

# ---- one suite, five forms ---------------------------------------------------------------------
suite_run mozlog
P="$T/mozlog.json"
expect_test "$P" mozlog/test_pass.js PASS green
expect_test "$P" mozlog/test_fail.js FAIL orange PASS
expect_test "$P" mozlog/test_skip.js SKIP yellow
expect_test "$P" mozlog/test_crash.js CRASH red PASS
[ "$(val "$(test_line "$P" mozlog/test_skip.js | cut -f5)" message)" = disabled ] || fail "mozlog: SKIP without its message"
[ "$(count "$P" test)" = 4 ] || fail "mozlog: $(count "$P" test) test markers"
crash=$(markers "$P" CRASH | cut -f5)
[ "$(val "$crash" signature)" = itest::Crash ] && [ "$(val "$crash" test)" = mozlog/test_crash.js ] &&
    [ "$(val "$crash" color)" = red ] || fail "mozlog: crash marker $crash"
sub=$(markers "$P" PASS | cut -f5)
[ "$(val "$sub" subtest)" = "sub one" ] && [ "$(val "$sub" test)" = mozlog/test_pass.js ] || fail "mozlog: subtest marker $sub"
[ "$(count "$P" suite)" = 1 ] || fail "mozlog: no suite marker"
cost_check "$P" mozlog/test_pass.js
cost_check "$P" mozlog/test_fail.js

suite_run tbpl
P="$T/tbpl.json"
expect_test "$P" tbpl/test_pass.js PASS green
expect_test "$P" tbpl/test_fail.js FAIL orange PASS
expect_test "$P" tbpl/test_skip.js SKIP yellow
expect_test "$P" tbpl/test_crash.js CRASH red PASS
[ "$(count "$P" test)" = 4 ] || fail "tbpl: $(count "$P" test) test markers"
[ "$(val "$(markers "$P" CRASH | cut -f5)" signature)" = itest::Crash ] || fail "tbpl: crash marker $(markers "$P" CRASH)"
[ "$(val "$(markers "$P" PASS | cut -f5)" subtest)" = "sub one" ] || fail "tbpl: subtest marker"
cost_check "$P" tbpl/test_pass.js
cost_check "$P" tbpl/test_fail.js

# TAP: a test point has no opener, so a test runs from the previous TAP line to its own, and
# costs what the tree spent since that line.
suite_run tap
P="$T/tap.json"
expect_test "$P" "tap pass" PASS green
expect_test "$P" "tap fail" FAIL orange PASS
expect_test "$P" "tap skip" SKIP yellow
expect_test "$P" "tap crash" FAIL orange PASS
[ "$(count "$P" test)" = 4 ] || fail "tap: $(count "$P" test) test markers"
cost_check "$P" "tap pass"
cost_check "$P" "tap fail"

# TAP as Node prints it: each test, its "# Subtest" opener included, only once it is done. Its
# YAML duration_ms, not the opener's arrival, says when it started; the line before the opener
# arrived then, so the cost is known.
suite_run tap-node
P="$T/tap-node.json"
expect_test "$P" "node pass" PASS green
expect_test "$P" "node fail" FAIL orange PASS
[ "$(count "$P" test)" = 2 ] || fail "tap-node: $(count "$P" test) test markers"
cost_check "$P" "node pass"
cost_check "$P" "node fail"

# Serial libtest prints a test's name when it starts and its result, on the same line, when it
# ends: the cost runs from the line's first byte, not from its completion.
suite_run libtest
P="$T/libtest.json"
expect_test "$P" it::pass PASS green
expect_test "$P" it::fail FAIL orange PASS
cost_check "$P" it::pass
cost_check "$P" it::fail

# go prints subtests' results after their parent's, once all of them ran: a subtest ends its
# reported time after its start, and its cost ends at the next subtest's start.
suite_run go-sub
P="$T/go-sub.json"
expect_test "$P" TestSub/pass PASS green
expect_test "$P" TestSub/fail FAIL orange PASS
cost_check "$P" TestSub/pass no-rss
cost_check "$P" TestSub/fail

suite_run gtest
P="$T/gtest.json"
expect_test "$P" GTest.Pass PASS green
expect_test "$P" GTest.Fail FAIL orange PASS
expect_test "$P" GTest.Skip SKIP yellow
# The crashed test never ends: it is closed INCOMPLETE when the run ends.
expect_test "$P" GTest.Crash INCOMPLETE orange
[ "$(count "$P" test)" = 4 ] || fail "gtest: $(count "$P" test) test markers"
cost_check "$P" GTest.Pass
cost_check "$P" GTest.Fail

suite_run go
P="$T/go.json"
# -json names each test's package: the test's full name is package/Test
expect_test "$P" example.com/itest/TestPass PASS green
expect_test "$P" example.com/itest/TestFail FAIL orange PASS
expect_test "$P" example.com/itest/TestSkip SKIP yellow
expect_test "$P" example.com/itest/TestCrash FAIL orange PASS
[ "$(count "$P" test)" = 4 ] || fail "go: $(count "$P" test) test markers"
[ "$(val "$(markers "$P" suite | cut -f5)" text)" = example.com/itest ] || fail "go: package suite marker"
cost_check "$P" example.com/itest/TestPass rss TestPass
cost_check "$P" example.com/itest/TestFail rss TestFail

# Pass-through is untouched by all this: the suite's bytes arrive as printed.
HELPER_COSTS="$T/costs.direct" "$HELPER" suite tbpl 0 | sed 's/took [0-9]*ms/took Nms/' >"$T/tbpl.want"
sed 's/took [0-9]*ms/took Nms/' "$T/tbpl.out" | cmp -s - "$T/tbpl.want" || fail "tbpl: the output changed on its way"

# ---- stderr ------------------------------------------------------------------------------------
suite_run mozlog 2
P="$T/mozlog.json"
[ -s "$T/mozlog.out" ] && fail "stderr suite: output on stdout"
[ "$(grep -c '"action":"test_end"' "$T/mozlog.err")" = 4 ] || fail "stderr suite: the lines did not pass through"
expect_test "$P" mozlog/test_fail.js FAIL orange PASS
[ "$(count "$P" test)" = 4 ] || fail "stderr suite: $(count "$P" test) test markers"

# ---- mixed formats in one run, interleaved tests ----------------------------------------------
P="$T/mixed.json"
HELPER_COSTS="$T/costs.mixed" "$RESMON_RUN" -i 0.05 -o "$P" -- sh -c \
    "'$HELPER' suite tbpl 0.02; '$HELPER' suite mozlog 0.02 2; '$HELPER' suite go 0.02; '$HELPER' suite gtest 0.02" \
    >/dev/null 2>&1 || fail "mixed run failed"
"$CHECK" "$P" || fail "mixed: invalid profile"
[ "$(count "$P" test)" = 16 ] || fail "mixed: $(count "$P" test) test markers, expected 16"
expect_test "$P" tbpl/test_fail.js FAIL orange PASS
expect_test "$P" mozlog/test_crash.js CRASH red PASS
expect_test "$P" example.com/itest/TestSkip SKIP yellow
expect_test "$P" GTest.Pass PASS green

P="$T/interleave.json"
HELPER_COSTS="$T/costs.par"
export HELPER_COSTS
"$RESMON_RUN" -i 0.05 -o "$P" -- "$HELPER" interleave 0.15 >/dev/null || fail "interleave run failed"
"$CHECK" "$P" || fail "interleave: invalid profile"
expect_test "$P" par/a.js PASS green
expect_test "$P" par/b.js FAIL orange PASS
a=$(test_line "$P" par/a.js)
b=$(test_line "$P" par/b.js)
printf '%s\n%s\n' "$a" "$b" | awk -F'\t' 'NR == 1 { as = $2; ae = $3 } NR == 2 { bs = $2; be = $3 }
    END { exit !(as < bs && bs < ae && ae < be) }' || fail "interleave: tests do not overlap as printed: $a / $b"
cost_check "$P" par/a.js
cost_check "$P" par/b.js

# ---- a 10 MiB line and binary garbage pass through byte-exact; later lines still parse -------
cmd="'$HELPER' bigline 10485760; echo; '$HELPER' bytes 300000; printf '\\n{\"action\":\\n\\377\\376\\n'; '$HELPER' suite mozlog 0.01"
HELPER_COSTS="$T/costs.big" sh -c "$cmd" >"$T/big.want"
P="$T/big.json"
HELPER_COSTS="$T/costs.big" "$RESMON_RUN" -i 0.05 -o "$P" -- sh -c "$cmd" >"$T/big.got" || fail "big line run failed"
"$CHECK" "$P" || fail "big line: invalid profile"
# The mozlog lines carry their own times: compare everything else.
sed 's/"time":[0-9]*,"thread":"MainThread","pid":[0-9]*/T/' "$T/big.want" >"$T/big.want.n"
sed 's/"time":[0-9]*,"thread":"MainThread","pid":[0-9]*/T/' "$T/big.got" >"$T/big.got.n"
cmp -s "$T/big.want.n" "$T/big.got.n" || fail "big line: output differs"
[ "$(wc -c <"$T/big.got")" -gt 10785760 ] || fail "big line: output cut short"
expect_test "$P" mozlog/test_fail.js FAIL orange PASS
[ "$(count "$P" test)" = 4 ] || fail "big line: $(count "$P" test) test markers after the garbage"

# ---- --parse=none ------------------------------------------------------------------------------
P="$T/none.json"
HELPER_COSTS="$T/costs.none" "$RESMON_RUN" --parse=none -i 0.05 -o "$P" -- "$HELPER" suite mozlog 0.01 >"$T/none.out" ||
    fail "--parse=none run failed"
"$CHECK" "$P" || fail "--parse=none: invalid profile"
[ "$(count "$P" test)" = 0 ] || fail "--parse=none: $(count "$P" test) test markers"
[ "$(count "$P" CRASH)" = 0 ] && [ "$(count "$P" suite)" = 0 ] || fail "--parse=none: test-log markers"
[ "$(grep -c '"action":"test_end"' "$T/none.out")" = 4 ] || fail "--parse=none: output lost"

# ---- a test hanging at the timeout -------------------------------------------------------------
P="$T/hang.json"
alarmed "$RESMON_RUN" -i 0.05 -o "$P" -- "$HELPER" sigcheck "$P" 30
st=$?
[ "$st" = 124 ] || fail "hang: status $st"
"$CHECK" "$P" || fail "hang: invalid profile"
expect_test "$P" stop/open-test.js TIMEOUT purple
case "$(markers "$P" timeout | cut -f5)" in
*'"openTests":["stop/open-test.js"]'*) ;;
*) fail "hang: the timeout marker does not name the open test: $(markers "$P" timeout)" ;;
esac

# ---- prove: the test file that hangs is the open test ----------------------------------------
# prove holds a file's TAP back until the file ends (its output is a pipe): the output names
# nothing of the hung file, its process does. The file says "ready" once it is where it stays.
if command -v prove >/dev/null 2>&1; then
    mkdir -p "$T/prove/t"
    printf '%s\n' 'use Test::More tests => 1;' 'ok(1, "quick");' >"$T/prove/t/a.t"
    printf '%s\n' 'use Test::More tests => 2;' 'ok(1, "first");' \
        'open(my $f, ">>", $ENV{HELPER_EVENTS}) or die; print $f "ready prove\n"; close $f;' \
        'sleep 300;' 'ok(1, "never");' >"$T/prove/t/hang.t"
    P="$T/prove.json"
    (cd "$T/prove" && alarmed "$RESMON_RUN" -i 0 -o "$P" --junit="$T/prove.xml" -- prove -v t/a.t t/hang.t)
    st=$?
    [ "$st" = 124 ] || fail "prove: status $st: $(cat "$T/alarmed.err")"
    "$CHECK" "$P" || fail "prove: invalid profile"
    expect_test "$P" t/hang.t TIMEOUT purple
    case "$(markers "$P" timeout | cut -f5)" in
    *'"openTests":["t/hang.t"]'*) ;;
    *) fail "prove: the timeout marker does not name the hung file: $(markers "$P" timeout)" ;;
    esac
    grep -q '^  open tests   t/hang.t$' "$T/alarmed.err" || fail "prove: the summary: $(cat "$T/alarmed.err")"
    grep -q '<testcase classname="t" name="hang.t" time="[0-9.]*">' "$T/prove.xml" ||
        fail "prove: the JUnit file: $(cat "$T/prove.xml")"
    # it ran from its process's start, before the stop, not from the stop
    stop_at=$(markers "$P" timeout | cut -f2)
    test_line "$P" t/hang.t | awk -F'\t' -v s="$stop_at" '{ exit !($2 < s - 5 && $3 > $2) }' ||
        fail "prove: the hung file's marker does not start with its process (stop at $stop_at): $(test_line "$P" t/hang.t)"
    # the file that ended is no open test: its TAP, printed as it ended, has its tests
    expect_test "$P" t/a.t/quick PASS green
else
    echo "SKIP: prove: not installed"
fi

# ---- markers from the command ------------------------------------------------------------------
P="$T/mark.json"
RR="$RESMON_RUN" "$RESMON_RUN" -i 0.05 -o "$P" -- sh -c '
    "$RR" --mark event ev-one "some text" &&
    "$RR" --mark begin span "a span" &&
    "$0" burn 0.02 &&
    "$RR" --mark end span &&
    "$RR" --mark phase-begin build &&
    "$0" burn 0.3 &&
    "$RR" --mark phase-end build &&
    "$0" garbage-marks &&
    "$RR" --mark event after-garbage' "$HELPER" || fail "--mark run failed"
"$CHECK" "$P" || fail "--mark: invalid profile"
ev=$(markers "$P" ev-one)
[ "$(printf '%s\n' "$ev" | cut -f3)" = null ] && [ "$(printf '%s\n' "$ev" | cut -f4)" = 0 ] || fail "--mark event: $ev"
[ "$(val "$(printf '%s\n' "$ev" | cut -f5)" text)" = "some text" ] || fail "--mark event text: $ev"
sp=$(markers "$P" span)
[ "$(printf '%s\n' "$sp" | cut -f4)" = 2 ] && [ "$(printf '%s\n' "$sp" | cut -f3)" != null ] || fail "--mark begin/end: $sp"
[ "$(val "$(printf '%s\n' "$sp" | cut -f5)" text)" = "a span" ] || fail "--mark begin text: $sp"
ph=$(markers "$P" Phase)
[ "$(printf '%s\n' "$ph" | wc -l)" = 1 ] || fail "--mark phase: $ph"
[ "$(printf '%s\n' "$ph" | cut -f4)" = 1 ] || fail "--mark phase: category is not 1: $ph"
pd=$(printf '%s\n' "$ph" | cut -f5)
[ "$(val "$pd" phase)" = build ] || fail "--mark phase name: $pd"
cpu=$(val "$pd" cpuTime)
# The phase holds the burner (its 300 ms, and its start-up and exit: more in a sanitizer build),
# and at most the two resmon-run --mark processes that bound it (the end of the first, the start
# of the second). Their process markers say what each cost (in clock ticks when they were not
# resmon-run's own children, hence the 30 ms of slack). At least 80 % of the burn: the phase's
# first reading is taken when resmon-run reads the datagram, which a loaded machine may delay
# past the burner's start, and ticks round.
pcpu() {
    markers "$P" process | grep -F -e "\"cmd\":\"$1" | cut -f5 |
        sed -n 's/.*"cpuTime":\([0-9.]*\).*/\1/p' | awk '{ s += $1 } END { printf "%.3f\n", s }'
}
marks=$(pcpu "$RESMON_RUN --mark phase-")
burner=$(pcpu "$HELPER burn 0.3\"")
# What the burner and a --mark process cost, each measured whole and apart (wait4): a process
# marker only sees up to the last sample, and misses what comes after it (the exit, and in a
# sanitizer build the start-up and the leak check).
alone() {
    "$HELPER" rusage-wrap sh -c '"$@" >/dev/null 2>&1; true' sh "$@" 2>&1 |
        sed -n 's/^children-cpu-ns //p' | awk '{ printf "%.3f\n", $1 / 1e6 }'
}
one=$(RESMON_FD=1 alone "$RESMON_RUN" --mark event x)
burn1=$(alone "$HELPER" burn 0.3)
echo "phase 'build' around a 300 ms burn: cpuTime $cpu ms (the burner: $burner ms, alone $burn1 ms; the --mark processes: $marks ms, one alone: $one ms), cpuPercent $(val "$pd" cpuPercent)"
ge "$cpu" 240 && ge "$(awk -v m="$marks" -v o="$one" -v b="$burner" -v b1="$burn1" 'BEGIN {
    if (2 * o > m) m = 2 * o; if (b1 > b) b = b1; if (b < 300) b = 300; print b * 1.05 + m + 30 }')" "$cpu" ||
    fail "--mark phase cpuTime $cpu ms; the burner took $burner ms, the --mark processes $marks ms"
has_key "$pd" cpuPercent || fail "--mark phase: no cpuPercent in the full profile: $pd"
[ "$(count "$P" after-garbage)" = 1 ] || fail "garbage datagrams disturbed the markers that follow"
# The stream had the phase with its cpuTime as well (checked on a run killed before the end).
P="$T/mark-stream.json"
new_events
RR="$RESMON_RUN" "$RESMON_RUN" -i 0.05 -o "$P" -- sh -c '
    "$RR" --mark phase-begin p && "$0" burn 0.05 && "$RR" --mark phase-end p &&
    "$0" wait-file "$1" "\"type\":\"marker\",\"name\":\"Phase\"" && exec "$0" sleep 30' "$HELPER" "$P" &
sup=$!
wait_event "found *" >/dev/null
"$CHECK" --stream --allow-torn "$P" || fail "--mark: invalid stream"
has_key "$(markers "$P" Phase | cut -f5)" cpuTime || fail "--mark: the streamed phase has no cpuTime: $(markers "$P" Phase)"
kill -TERM $sup
wait $sup

# Under --no-profile a record has nowhere to go: --mark does nothing and exits 0, so that a
# `set -e` script runs the same with or without a profile; wrong arguments are still an error.
out=$("$RESMON_RUN" -q --no-profile -- sh -c 'echo "fd=$RESMON_FD"; set -e; "$0" --mark phase-begin build
    "$0" --mark event done "all built"; "$0" --mark phase-end build; echo marked' "$RESMON_RUN" 2>"$T/mark.err")
st=$?
[ $st = 0 ] && [ "$out" = "fd=none
marked" ] || fail "--mark under --no-profile: status $st, output '$out', $(cat "$T/mark.err")"
st=0
"$RESMON_RUN" -q --no-profile -- "$RESMON_RUN" --mark nosuchkind x 2>"$T/mark.err" || st=$?
[ $st = 125 ] && grep -q "usage: .*--mark event|begin" "$T/mark.err" ||
    fail "--mark with a wrong kind under --no-profile: status $st, $(cat "$T/mark.err")"

# Outside resmon-run --mark has nowhere to send to: 125 and a clear message.
(unset RESMON_FD; "$RESMON_RUN" --mark event x) 2>"$T/mark.err"
st=$?
[ "$st" = 125 ] || fail "--mark outside: status $st"
grep -q "not running under resmon-run" "$T/mark.err" || fail "--mark outside: message '$(cat "$T/mark.err")'"

# --max-markers: 300 passing tests and one failure under a limit of 100. The passes past the
# limit are left out and counted, the failure and the run's own markers stay, the command's output
# is untouched, and resmon-run says what it left out.
P="$T/limit.json"
"$RESMON_RUN" -i 0 --max-markers=100 -o "$P" -- sh -c '
    i=0
    while [ $i -lt 300 ]; do
        echo "{\"action\":\"test_start\",\"time\":1767225600000,\"test\":\"t$i\"}"
        echo "{\"action\":\"test_end\",\"time\":1767225600001,\"test\":\"t$i\",\"status\":\"PASS\"}"
        i=$((i + 1))
    done
    echo "{\"action\":\"test_start\",\"time\":1767225600002,\"test\":\"last\"}"
    echo "{\"action\":\"test_end\",\"time\":1767225600003,\"test\":\"last\",\"status\":\"FAIL\",\"expected\":\"PASS\"}"
    ' >"$T/limit.out" 2>"$T/limit.err" || fail "--max-markers: the run failed: $(cat "$T/limit.err")"
"$CHECK" "$P" || fail "--max-markers: invalid profile"
[ "$(wc -l <"$T/limit.out")" = 602 ] || fail "--max-markers: the output was altered"
# (the limit counts every marker: a process marker may come before the tests)
kept=$(($(count "$P" test) - 1))
[ "$kept" -ge 95 ] && [ "$kept" -le 100 ] || fail "--max-markers: $kept passing tests kept, not up to the limit of 100"
expect_test "$P" last FAIL orange PASS
[ "$(count "$P" command)" = 1 ] && [ "$(count "$P" finalize)" = 1 ] || fail "--max-markers: the run's own markers are missing"
[ "$(meta "$P" maxMarkers)" = 100 ] || fail "--max-markers: meta.maxMarkers $(meta "$P" maxMarkers)"
note=$(markers "$P" "markers left out" | cut -f5)
out=$((300 - kept))
[ "$(val "$note" message)" = "$out markers past the limit of 100 were left out ($out of them expected passes)" ] ||
    fail "--max-markers: the profile's note: $note"
grep -q "$out markers past the limit of 100 were left out of the profile" "$T/limit.err" ||
    fail "--max-markers: no warning: $(cat "$T/limit.err")"
exit 0

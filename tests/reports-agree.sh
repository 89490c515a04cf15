#!/bin/sh
# One model of a run's results: the summary on stderr, GitHub's job summary and annotations, and
# the JUnit report say the same of every test and every count, because they are read from the
# same stream by the same reader (results.h), on runs where two readings could part: results the
# harness expected though they are not passes (mozlog's expected TIMEOUT, ERROR and CRASH, whose
# markers are coloured for their status), a pass then an error at teardown (pytest: one test,
# errored), two TeamCity flows interleaved, a test still running at a timeout, and the summary of
# --no-profile (the stream then is a file of its own, removed at the end).
. "$TOP_SRCDIR/tests/lib.sh"

q() { xmllint --xpath "string($2)" "$1" 2>/dev/null; }
command -v xmllint >/dev/null 2>&1 || skip "no xmllint"

# agree NAME: $T/NAME.xml (JUnit), NAME.err (the run's stderr), NAME.md (the job summary) say the
# same: as many tests; the summary's unexpected ones are JUnit's failures and errors, and each has
# its annotation (at most 9); the job summary's count is the summary's.
agree() {
    _j=$T/$1.xml
    junit_valid "$_j" || fail "$1: not valid JUnit"
    _row=$(sed -n 's/^  tests  *//p' "$T/$1.err")
    _n=${_row%%:*}
    _u=$(printf '%s\n' "$_row" | sed -n 's/.*(\([0-9]*\) unexpected)$/\1/p')
    _u=${_u:-0}
    [ "$_n" = "$(q "$_j" /testsuites/@tests)" ] ||
        fail "$1: the summary counts $_n tests, JUnit $(q "$_j" /testsuites/@tests): $_row"
    _bad=$(($(q "$_j" /testsuites/@failures) + $(q "$_j" /testsuites/@errors)))
    [ "$_u" = "$_bad" ] || fail "$1: the summary has $_u unexpected, JUnit $_bad failures and errors: $_row"
    _ann=$(grep '^::\(error\|warning\) ' "$T/$1.err" | grep -vc 'title=resmon-run%3A')
    [ "$_ann" = "$((_u < 9 ? _u : 9))" ] || fail "$1: $_ann annotations for $_u unexpected results"
    grep -qxF "| tests | $_row |" "$T/$1.md" || fail "$1: the job summary's count: $(grep '^| tests' "$T/$1.md")"
}
# run NAME ARGS...: resmon-run under GitHub Actions with a JUnit report, its stderr in NAME.err
run() {
    _name=$1; shift
    : >"$T/$_name.md"
    env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/$_name.md" "$RESMON_RUN" -i 0 --junit="$T/$_name.xml" "$@" \
        >/dev/null 2>"$T/$_name.err"
}

# ---- results the harness expected: not failures, whatever their colour -------------------------
cat >"$T/moz.sh" <<'EOS'
echo '{"action":"suite_start","time":1,"thread":"m","pid":1,"source":"s","tests":{"default":["a","b","c","d","e"]}}'
echo '{"action":"test_start","time":2,"thread":"m","pid":1,"source":"s","test":"a"}'
echo '{"action":"test_end","time":3,"thread":"m","pid":1,"source":"s","test":"a","status":"TIMEOUT"}'
echo '{"action":"test_start","time":4,"thread":"m","pid":1,"source":"s","test":"b"}'
echo '{"action":"test_end","time":5,"thread":"m","pid":1,"source":"s","test":"b","status":"ERROR"}'
echo '{"action":"test_start","time":6,"thread":"m","pid":1,"source":"s","test":"c"}'
echo '{"action":"test_end","time":7,"thread":"m","pid":1,"source":"s","test":"c","status":"FAIL","expected":"PASS","message":"boom"}'
echo '{"action":"test_start","time":8,"thread":"m","pid":1,"source":"s","test":"d"}'
echo '{"action":"test_end","time":9,"thread":"m","pid":1,"source":"s","test":"d","status":"CRASH","expected":"PASS"}'
echo '{"action":"test_start","time":10,"thread":"m","pid":1,"source":"s","test":"e"}'
echo '{"action":"test_end","time":11,"thread":"m","pid":1,"source":"s","test":"e","status":"PASS"}'
echo '{"action":"suite_end","time":12,"thread":"m","pid":1,"source":"s"}'
EOS
run moz -o "$T/moz.json" -- sh "$T/moz.sh"
agree moz
[ "$(sed -n 's/^  tests  *//p' "$T/moz.err")" = "5: 1 PASS, 1 FAIL, 1 ERROR, 1 TIMEOUT, 1 CRASH (2 unexpected)" ] ||
    fail "mozlog: $(sed -n 's/^  tests  *//p' "$T/moz.err")"
[ "$(q "$T/moz.xml" '//testcase[@name="a"]/skipped/@message')" = "expected TIMEOUT" ] || fail "mozlog: an expected TIMEOUT"
[ "$(q "$T/moz.xml" '//testcase[@name="b"]/skipped/@message')" = "expected ERROR" ] || fail "mozlog: an expected ERROR"
grep -q '^::error title=CRASH d::' "$T/moz.err" || fail "mozlog: the crash's annotation"
profile_ok "$T/moz.json" || fail "mozlog: the profile"
echo "expected results: the same count everywhere"

# ---- a pass, then an error at teardown; after a failure, two results (real pytest -v logs) -------
for n in edges edges-xdist; do
    run "td-$n" -o "$T/td-$n.json" -- cat "$TOP_SRCDIR/tests/fixtures/real/pytest/$n.log"
    agree "td-$n"
    profile_ok "$T/td-$n.json" || fail "$n: the profile"
done
# the test once among the slowest, as errored, for as long as JUnit says it took
grep -q '^::error file=tests/test_edges.py,line=[0-9]*,title=ERROR tests/test_edges.py%3A%3Atest_teardown_error::' \
    "$T/td-edges.err" || fail "the teardown error's annotation: $(grep '^::' "$T/td-edges.err")"
echo "teardown errors: the same count everywhere"

# ---- two TeamCity flows interleaved (a real mocha-teamcity-reporter log) -----------------------
run tc -o "$T/tc.json" -- cat "$TOP_SRCDIR/tests/fixtures/real/teamcity/mocha-shards.log"
agree tc
profile_ok "$T/tc.json" || fail "teamcity: the profile"
echo "teamcity flows: the same count everywhere"

# ---- a test still running at a timeout: the job summary at the stop names it; at the end it is
# one more test, TIMEOUT, everywhere ------------------------------------------------------------
cat >"$T/hang.sh" <<EOS
echo '{"action":"test_start","test":"quick.js"}'
echo '{"action":"test_end","test":"quick.js","status":"FAIL","expected":"PASS"}'
echo '{"action":"test_start","test":"hangs.js"}'
exec "$HELPER" sleep 300
EOS
: >"$T/hang.md"
env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/hang.md" "$RESMON_RUN" -i 0 -o "$T/hang.json" --junit="$T/hang.xml" \
    --timeout=1h -- sh "$T/hang.sh" >/dev/null 2>"$T/hang.err" &
sup=$!
stream_shows "$T/hang.json" '"kind":"test","key":"hangs.js"'
kill -ALRM $sup
wait $sup
st=$?
[ "$st" = 124 ] || fail "hang: status $st"
agree hang
grep -q '^  open tests *hangs.js' "$T/hang.err" || fail "hang: the test running at the stop: $(cat "$T/hang.err")"
grep -q '^| hangs.js |$' "$T/hang.md" || fail "hang: the job summary's test running at the stop"
grep -q '^::error title=resmon-run%3A timeout::.*still running: hangs.js' "$T/hang.err" || fail "hang: the verdict"
[ "$(q "$T/hang.xml" '//testcase[@classname="hangs"]/error/@type')" = timeout ] || fail "hang: JUnit's timeout"
profile_ok "$T/hang.json" || fail "hang: the profile"
echo "a test running at a timeout: the same everywhere"

# ---- --no-profile: the summary's tests from a stream of its own, which goes at the end --------------
mkdir "$T/tmp"
TMPDIR=$T/tmp "$RESMON_RUN" -i 0 --no-profile -- sh "$T/moz.sh" >/dev/null 2>"$T/np.err"
[ "$(sed -n 's/^  tests  *//p' "$T/np.err")" = "5: 1 PASS, 1 FAIL, 1 ERROR, 1 TIMEOUT, 1 CRASH (2 unexpected)" ] ||
    fail "--no-profile: $(cat "$T/np.err")"
[ -z "$(ls "$T/tmp")" ] || fail "--no-profile left $(ls "$T/tmp")"
echo "--no-profile: the same count, no file left"

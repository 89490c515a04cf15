#!/bin/sh
# --junit: the tests of a run as JUnit XML, valid against the schema the Jenkins xUnit plugin
# checks its input with (tests/fixtures/junit/junit-10.xsd) and junit.xsd, on a normal run, a timeout, a stop request (the report is
# there BEFORE the first stop signal), a command killed mid-run, and a killed-then-recovered run.
. "$TOP_SRCDIR/tests/lib.sh"
command -v xmllint >/dev/null 2>&1 || skip "xmllint (libxml2-utils) is not installed"

# q FILE XPATH: the string value of XPATH in FILE.
q() { xmllint --xpath "string($2)" "$1" 2>/dev/null; }
# qn FILE XPATH: how many nodes XPATH selects.
qn() { xmllint --xpath "count($2)" "$1" 2>/dev/null; }
expect() { # expect WHAT GOT WANT
    [ "$2" = "$3" ] || fail "$1: '$2', expected '$3'"
}

# ---- a normal run: every outcome, names split, per-test figures, run properties --------------
cat >"$T/suite.sh" <<EOS
echo '{"action":"suite_start","source":"s"}'
echo '{"action":"test_start","test":"dir/passes.js"}'
"$HELPER" burn 0.3
echo '{"action":"test_end","test":"dir/passes.js","status":"PASS"}'
echo '{"action":"test_start","test":"dir/fails.js"}'
echo '{"action":"test_status","test":"dir/fails.js","subtest":"sum","status":"FAIL","expected":"PASS","message":"1 + 1 != 3 <&>"}'
echo '{"action":"test_end","test":"dir/fails.js","status":"FAIL","expected":"PASS"}'
echo '{"action":"test_start","test":"dir/skipped.js"}'
echo '{"action":"test_end","test":"dir/skipped.js","status":"SKIP","message":"not on linux"}'
echo '{"action":"test_start","test":"dir/known.js"}'
echo '{"action":"test_end","test":"dir/known.js","status":"FAIL","expected":"FAIL"}'
echo '{"action":"test_start","test":"dir/crashes.js"}'
echo '{"action":"test_end","test":"dir/crashes.js","status":"CRASH","expected":"PASS"}'
echo '{"action":"test_start","test":"other/errs.js"}'
echo '{"action":"test_end","test":"other/errs.js","status":"ERROR","expected":"OK"}'
echo '{"action":"test_start","test":"other/xpass.js"}'
echo '{"action":"test_end","test":"other/xpass.js","status":"PASS","expected":"FAIL"}'
echo '{"action":"suite_end"}'
exit 3
EOS
expect_status 3 "$RESMON_RUN" -q -i 0.05 -o "$T/p.json" --junit="$T/normal.xml" -- sh "$T/suite.sh" >/dev/null
J=$T/normal.xml
junit_valid "$J" || fail "normal run: not valid JUnit"
expect "tests" "$(q "$J" /testsuites/@tests)" 7
expect "failures" "$(q "$J" /testsuites/@failures)" 2
expect "errors" "$(q "$J" /testsuites/@errors)" 2
expect "suites" "$(qn "$J" //testsuite)" 2
expect "suite dir" "$(q "$J" '//testsuite[@name="dir"]/@tests')" 5
expect "suite dir skipped" "$(q "$J" '//testsuite[@name="dir"]/@skipped')" 2
expect "classname" "$(q "$J" '//testcase[@name="passes.js"]/@classname')" dir
expect "a pass has no outcome" "$(qn "$J" '//testcase[@name="passes.js"]/*[not(self::system-out)]')" 0
expect "failure type" "$(q "$J" '//testcase[@name="fails.js"]/failure/@type')" failure
case "$(q "$J" '//testcase[@name="fails.js"]/failure')" in
*"FAIL sum: 1 + 1 != 3 <&>"*) ;;
*) fail "the failing subtest is not in the failure: $(q "$J" '//testcase[@name="fails.js"]/failure')" ;;
esac
expect "skip" "$(q "$J" '//testcase[@name="skipped.js"]/skipped/@message')" "not on linux"
expect "expected failure" "$(q "$J" '//testcase[@name="known.js"]/skipped/@message')" "expected FAIL"
expect "crash" "$(q "$J" '//testcase[@name="crashes.js"]/error/@type')" crash
expect "error" "$(q "$J" '//testcase[@name="errs.js"]/error/@type')" error
expect "unexpected pass" "$(q "$J" '//testcase[@name="xpass.js"]/failure/@type')" unexpected-pass
expect "reason" "$(q "$J" '//testsuite[1]/properties/property[@name="resmon.reason"]/@value')" exit
expect "exit" "$(q "$J" '//testsuite[1]/properties/property[@name="resmon.exit"]/@value')" "status 3"
# Per-test figures: CPU time in seconds, peak memory in bytes (the tree's, sampled), as
# [[PROPERTY|name=value]] lines of the test's system-out (no properties in a testcase: the Jenkins
# xUnit plugin's schema refuses them).
expect "no testcase properties" "$(qn "$J" '//testcase/properties')" 0
out=$(q "$J" '//testcase[@name="passes.js"]/system-out')
cpu=$(printf '%s\n' "$out" | sed -n 's/^\[\[PROPERTY|cpuTime=\(.*\)\]\]$/\1/p')
rss=$(printf '%s\n' "$out" | sed -n 's/^\[\[PROPERTY|maxRSS=\(.*\)\]\]$/\1/p')
case "$cpu" in [0-9]*.[0-9][0-9][0-9]) ;; *) fail "cpuTime '$cpu'" ;; esac
case "$rss" in [1-9]*) ;; *) fail "maxRSS '$rss'" ;; esac
echo "normal run: valid, 7 tests in 2 suites"

# ---- names of the other formats --------------------------------------------------------------
cat >"$T/names.sh" <<'EOS'
echo "tests/test_a.py::TestK::test_x[1-2] PASSED"
echo "tests/test_a.py::test_y FAILED"
echo "[ RUN      ] Suite.Works"
echo "[       OK ] Suite.Works (0 ms)"
EOS
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/names.json" --junit="$T/names.xml" -- sh "$T/names.sh" >/dev/null
J=$T/names.xml
junit_valid "$J" || fail "names: not valid JUnit"
expect "gtest classname" "$(q "$J" '//testcase[@name="Works"]/@classname')" Suite
expect "pytest classname" "$(q "$J" '//testcase[@name="test_y"]/@classname')" tests.test_a
expect "pytest suite" "$(q "$J" '//testcase[@name="test_y"]/../@name')" tests/test_a.py
expect "pytest class" "$(q "$J" '//testcase[@name="test_x[1-2]"]/@classname')" tests.test_a.TestK
expect "one suite per file" "$(q "$J" '//testsuite[@name="tests/test_a.py"]/@tests')" 2

# ---- a timeout: the open test is an error of type timeout that names the timeout -------------
# The run times out (SIGALRM, as at --timeout) once the stream shows the test open.
hang_script() { # hang_script FILE: one test passes, the next hangs
    cat >"$1" <<EOS
echo \$\$ >"\$0.pid"
echo '{"action":"test_start","test":"dir/quick.js"}'
echo '{"action":"test_end","test":"dir/quick.js","status":"PASS"}'
echo '{"action":"test_start","test":"dir/hangs.js"}'
exec "$HELPER" sleep 300
EOS
}
hang_script "$T/hang.sh"
# start_hung NAME ARGS...: resmon-run in the background ($sup), its stream $T/NAME.json showing
# the hung test open.
start_hung() {
    _n=$1; shift
    "$RESMON_RUN" -q -i 0 -o "$T/$_n.json" "$@" -- sh "$T/hang.sh" >/dev/null 2>"$T/$_n.err" &
    sup=$!
    stream_shows "$T/$_n.json" '"kind":"test","key":"dir/hangs.js"'
}
start_hung timeout --timeout=1h --junit="$T/timeout.xml"
kill -ALRM $sup
wait $sup
expect "timeout status" $? 124
J=$T/timeout.xml
junit_valid "$J" || fail "timeout: not valid JUnit"
expect "timeout type" "$(q "$J" '//testcase[@name="hangs.js"]/error/@type')" timeout
expect "timeout message" "$(q "$J" '//testcase[@name="hangs.js"]/error/@message')" \
    "still running when the run timed out after 3600 s (--timeout)"
expect "the quick test passed" "$(qn "$J" '//testcase[@name="quick.js"]/error')" 0
expect "timeout reason" "$(q "$J" '//testsuite[1]/properties/property[@name="resmon.reason"]/@value')" timeout
expect "timeout property" "$(q "$J" '//testsuite[1]/properties/property[@name="resmon.timeout"]/@value')" 3600.000
echo "timeout: the hung test is an error of type timeout"

# ---- a stop request: the report is complete before the first stop signal reaches the tree -----
# The command, at TERM, copies the report it finds: that copy must already name the hung test.
cat >"$T/term.sh" <<EOS
trap 'cp "$T/term.xml" "$T/raw/at-term.xml"; exit 1' TERM
echo '{"action":"test_start","test":"dir/hangs.js"}'
"$HELPER" sleep 300 &
wait \$!
EOS
mkdir -p "$T/raw"
"$RESMON_RUN" -q -i 0 -o "$T/term.json" --junit="$T/term.xml" -- sh "$T/term.sh" >/dev/null 2>&1 &
sup=$!
stream_shows "$T/term.json" '"kind":"test","key":"dir/hangs.js"'
kill -TERM $sup
wait $sup
[ -f "$T/raw/at-term.xml" ] || fail "stop request: no report when the command got TERM"
J=$T/raw/at-term.xml
junit_valid "$J" || fail "at TERM: not valid JUnit"
expect "at TERM" "$(q "$J" '//testcase[@name="hangs.js"]/error/@type')" incomplete
expect "at TERM reason" "$(q "$J" '//testsuite[1]/properties/property[@name="resmon.reason"]/@value')" signal
echo "stop request: the report named the hung test before the command got TERM"

# ---- a hung pytest -v test: named in the report written at the stop -------------------------
# pytest -v prints a test's node id when it starts and its result and newline when it ends: the
# unfinished line is the hung test (real pytest output, tests/fixtures/real/README).
cat >"$T/pyhang.sh" <<EOS
trap 'cp "$T/pyhang.xml" "$T/raw/py-at-term.xml"; exit 1' TERM
cat "$TOP_SRCDIR/tests/fixtures/real/pytest/hang.v.log"
"$HELPER" sleep 300 &
wait \$!
EOS
"$RESMON_RUN" -q -i 0 -o "$T/pyhang.json" --timeout=1h --junit="$T/pyhang.xml" -- sh "$T/pyhang.sh" \
    >"$T/pyhang.out" 2>&1 &
sup=$!
# the unfinished line passed through (and so read by resmon-run)
until grep -q '::test_hangs $' "$T/pyhang.out"; do sleep 0.05; done
kill -ALRM $sup
wait $sup
J=$T/raw/py-at-term.xml
[ -f "$J" ] || fail "pytest hang: no report when the command got TERM"
junit_valid "$J" || fail "pytest hang: not valid JUnit"
expect "pytest hang at TERM" "$(q "$J" '//testcase[@name="test_hangs"]/error/@type')" timeout
expect "pytest hang at TERM, suite" "$(q "$J" '//testcase[@name="test_hangs"]/../@name')" tests/test_hang.py
expect "pytest hang at TERM, the pass" "$(qn "$J" '//testcase[@name="test_quick"]')" 1
expect "pytest hang at the end" "$(q "$T/pyhang.xml" '//testcase[@name="test_hangs"]/error/@type')" timeout
expect "pytest hang: one testcase" "$(qn "$T/pyhang.xml" '//testcase[@name="test_hangs"]')" 1
echo "pytest hang: the unfinished line's test is in the report written before the signal"

# ---- the command killed mid-run: the report still names the test it was in -----------------
start_hung cmdkill --junit="$T/cmdkill.xml"
kill -KILL "$(cat "$T/hang.sh.pid")"
wait $sup
expect "killed command status" $? 137
J=$T/cmdkill.xml
junit_valid "$J" || fail "killed command: not valid JUnit"
expect "killed command" "$(q "$J" '//testcase[@name="hangs.js"]/error/@type')" incomplete
expect "killed command exit" "$(q "$J" '//testsuite[1]/properties/property[@name="resmon.exit"]/@value')" "signal KILL"
# a signal resmon-run did not send is the command's own death, not a stop (as OTLP reads it)
expect "killed command message" "$(q "$J" '//testcase[@name="hangs.js"]/error/@message')" \
    "still running when the command died of signal KILL"
echo "killed command: the hung test is incomplete"

# ---- resmon-run killed, then recovered: --recover rebuilds the report from the stream ---------
start_hung killed
kill -KILL $sup
wait $sup 2>/dev/null
kill -KILL "$(cat "$T/hang.sh.pid")"
"$RESMON_RUN" --recover="$T/killed.json" -o "$T/recovered.json" --junit="$T/recovered.xml" 2>"$T/recover.err" ||
    fail "recover: $(cat "$T/recover.err")"
grep -q "wrote the JUnit report '$T/recovered.xml': 2 tests, 1 never ended" "$T/recover.err" ||
    fail "recover said: $(cat "$T/recover.err")"
J=$T/recovered.xml
junit_valid "$J" || fail "recovered: not valid JUnit"
expect "recovered" "$(q "$J" '//testcase[@name="hangs.js"]/error/@type')" incomplete
expect "recovered pass" "$(qn "$J" '//testcase[@name="quick.js"]')" 1
# A full profile is no stream: said, and nothing written.
expect_status 125 "$RESMON_RUN" --recover="$T/recovered.json" -o "$T/again.json" --junit="$T/none.xml" 2>"$T/full.err"
grep -q "is not a profile stream" "$T/full.err" || fail "full profile: $(cat "$T/full.err")"
[ ! -e "$T/none.xml" ] || fail "a report from a full profile"
echo "killed run: recovered report names the hung test"

# ---- a log without tests: the command is the testcase --------------------------------------
expect_status 2 "$RESMON_RUN" -q -i 0 -o "$T/plain.json" --junit="$T/plain.xml" -- sh -c 'exit 2'
J=$T/plain.xml
junit_valid "$J" || fail "no tests: not valid JUnit"
expect "command case" "$(q "$J" '//testcase/@name')" "sh -c exit 2"
expect "command failure" "$(q "$J" '//testcase/failure/@message')" "status 2 (exit)"
# a command that crashed on its own: its failure, not a stop (OTLP: "failure", not "cancellation")
"$RESMON_RUN" -q -i 0 -o "$T/segv.json" --junit="$T/segv.xml" -- sh -c 'kill -SEGV $$' >/dev/null 2>&1
J=$T/segv.xml
junit_valid "$J" || fail "crash: not valid JUnit"
expect "crash failure" "$(q "$J" '//testcase/failure/@type')" signal
expect "crash message" "$(q "$J" '//testcase/failure/@message')" "signal SEGV (signal)"
expect "crash errors" "$(q "$J" '//testsuite/@errors')" 0

# ---- libxml2 is loaded by the runs that write XML, and only by them (src/report/libxml.h) ------------
if command -v readelf >/dev/null 2>&1; then
    ! readelf -d "$RESMON_RUN" | grep -q 'NEEDED.*libxml2' || fail "resmon-run is linked with libxml2"
fi
# What a run maps, read by its command (resmon-run is not dumpable: only root reads its maps)
maps() { "$RESMON_RUN" -q "$@" -- sh -c 'n=$(grep -c "/libxml2\.so" /proc/$PPID/maps 2>/dev/null)
    [ $? -le 1 ] && echo "$n" || echo unreadable'; }
m=$(maps -o "$T/nx.json")
if [ "$m" != unreadable ]; then
    [ "$m" = 0 ] || fail "a run without --junit loaded libxml2"
    [ "$(maps -o "$T/wx.json" --junit="$T/wx.xml")" -gt 0 ] || fail "--junit did not load libxml2"
fi

# ---- failure texts printed after the results (a real pytest log) ------------------------------
# pytest says why a test failed only after every result (its FAILURES reports and short summary):
# the failed test's testcase, its marker and the summary's unexpected list still hold the text,
# and so does what --recover rebuilds from the stream of a run killed once the texts were out.
L=$TOP_SRCDIR/tests/fixtures/real/pytest/msgs.log
expect_status 0 "$RESMON_RUN" -i 0 -o "$T/texts.json" --junit="$T/texts.xml" -- cat "$L" >/dev/null 2>"$T/texts.err"
J=$T/texts.xml
junit_valid "$J" || fail "texts: not valid JUnit"
expect "a failure's text" "$(q "$J" '//testcase[@name="test_assert_eq"]/failure/@message')" \
    "FAIL: assert (1 + 1) == 3"
expect "an error's text" "$(q "$J" '//testcase[@name="test_error_in_setup"]/error/@message')" \
    "RuntimeError: fixture exploded"
grep -q 'test_assert_eq — assert (1 + 1) == 3' "$T/texts.err" ||
    fail "the summary's unexpected list lacks the text: $(cat "$T/texts.err")"
grep -q '"message":"assert (1 + 1) == 3"' "$T/texts.json" || fail "the profile's marker lacks the text"
# killed_and_recovered NAME LOG TEXT: a run printing LOG, then sleeping, is killed (and the
# command with it) once its stream $T/NAMEkill.json holds TEXT; --recover rebuilds its profile
# $T/NAMErec.json and report $T/NAMErec.xml from that stream.
killed_and_recovered() {
    "$RESMON_RUN" -q -i 0 -o "$T/$1kill.json" -- \
        sh -c 'cat "$1"; echo $$ >"$2"; exec "$3" sleep 300' sh "$2" "$T/$1kill.pid" "$HELPER" >/dev/null 2>&1 &
    _sup=$!
    stream_shows "$T/$1kill.json" "$3"
    kill -KILL $_sup
    wait $_sup
    kill -KILL "$(cat "$T/$1kill.pid")" 2>/dev/null
    "$RESMON_RUN" --recover="$T/$1kill.json" -o "$T/$1rec.json" --junit="$T/$1rec.xml" 2>"$T/$1rec.err" ||
        fail "recover: $(cat "$T/$1rec.err")"
}
killed_and_recovered text "$L" '"type":"message","test":"tests/test_msgs.py::test_prints"'
expect "a recovered text" "$(q "$T/textrec.xml" '//testcase[@name="test_prints"]/failure/@message')" \
    "FAIL: assert False"
grep -q '"message":"assert False"' "$T/textrec.json" || fail "the recovered profile's marker lacks the text"
echo "texts: printed after the results, in the report, the profile and the summary"

# ---- skip reasons the -v line cut, whole from the short summary (a real pytest -v -rA log) ------
# "SKIPPED (needs a database server...)" on the result's line; "SKIPPED [1] tests/x.py:9: <all of
# it>" in the summary: the testcase and the profile's marker have it whole.
L=$TOP_SRCDIR/tests/fixtures/real/pytest/skips.log
R="needs a database server listening on localhost:5432 with the fixtures loaded, which this machine does not have"
P="parametrised cases skipped with one long reason that the verbose line cannot hold in eighty columns"
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/skips.json" --junit="$T/skips.xml" -- \
    cat "$L" >/dev/null
J=$T/skips.xml
junit_valid "$J" || fail "skips: not valid JUnit"
expect "a skip's whole reason" "$(q "$J" '//testcase[@name="test_skip_long"]/skipped/@message')" "$R"
expect "two skips' whole reason" "$(q "$J" '//testcase[@name="test_skip_param[2]"]/skipped/@message')" "$P"
expect "a short reason" "$(q "$J" '//testcase[@name="test_skip_short"]/skipped/@message')" short
profile_ok "$T/skips.json" || fail "skips: the profile"
grep -qF "\"message\":\"$R\"" "$T/skips.json" || fail "the profile's marker lacks the whole reason"
! grep -qF '"message":"needs a database server..."' "$T/skips.json" || fail "the profile kept the cut reason"
echo "skips: the whole reason of the short summary"

# ---- a test that passed, then errored at teardown: one test, errored (real pytest -v logs) ------
# When a fixture's teardown raises, pytest -v prints "t.py::test_a PASSED" then "t.py::test_a
# ERROR" (xdist: "[gw0] ... ERROR t.py::test_a"): its JUnit report has one testcase, with the
# error; after a FAILED it has two, the failure and the error, each with its text. The summary
# counts as the report does, the profile's ERROR marker says which result it replaces, and
# --recover reads the stream of a killed run the same way.
for n in edges edges-xdist; do
    L=$TOP_SRCDIR/tests/fixtures/real/pytest/$n.log
    expect_status 0 "$RESMON_RUN" -i 0 -o "$T/td-$n.json" --junit="$T/td-$n.xml" -- cat "$L" >/dev/null 2>"$T/td-$n.err"
    J=$T/td-$n.xml
    junit_valid "$J" || fail "$n: not valid JUnit"
    expect "$n: a pass then an error is one testcase" "$(qn "$J" '//testcase[@name="test_teardown_error"]')" 1
    expect "$n: the error" "$(q "$J" '//testcase[@name="test_teardown_error"]/error/@message')" \
        "RuntimeError: teardown broke"
    expect "$n: a failure then an error is two" "$(qn "$J" '//testcase[@name="test_fail_teardown_error"]')" 2
    expect "$n: the failure's text" "$(q "$J" '//testcase[@name="test_fail_teardown_error"]/failure/@message')" \
        "FAIL: assert 1 == 2"
    expect "$n: the error's text" "$(q "$J" '//testcase[@name="test_fail_teardown_error"]/error/@message')" \
        "RuntimeError: teardown broke"
    grep -q 'ERROR    tests/test_edges.py::test_fail_teardown_error — RuntimeError: teardown broke' "$T/td-$n.err" ||
        fail "$n: the summary's unexpected list: $(cat "$T/td-$n.err")"
    profile_ok "$T/td-$n.json" || fail "$n: the profile"
    grep -q '"status":"ERROR",[^}]*"amends":"PASS"' "$T/td-$n.json" || fail "$n: no ERROR marker replacing the PASS"
done
expect "the summary's count" "$(sed -n 's/^  tests  *//p' "$T/td-edges.err")" "10: 4 PASS, 4 FAIL, 2 ERROR (6 unexpected)"
expect "the slowest, the test once" "$(grep -c ' ms  tests/test_edges.py::test_teardown_error$' "$T/td-edges.err")" 1
expect "the summary's count, xdist" "$(sed -n 's/^  tests  *//p' "$T/td-edges-xdist.err")" \
    "7: 2 PASS, 3 FAIL, 2 ERROR (5 unexpected)"
killed_and_recovered td "$TOP_SRCDIR/tests/fixtures/real/pytest/edges.log" '"message":"assert 1 == 2","status":"FAIL"'
expect "recovered: one testcase" "$(qn "$T/tdrec.xml" '//testcase[@name="test_teardown_error"]/error')" 1
expect "recovered: no other" "$(qn "$T/tdrec.xml" '//testcase[@name="test_teardown_error"]')" 1
expect "recovered: the failure's text" \
    "$(q "$T/tdrec.xml" '//testcase[@name="test_fail_teardown_error"]/failure/@message')" "FAIL: assert 1 == 2"
echo "teardown errors: one test after a pass, two after a failure, as pytest's report has them"

# ---- TeamCity messages of two shards whose flows interleave (a real mocha-teamcity-reporter log) -
# Both shards run a test "adds" and a test "fails on purpose" at the same time: each flow's
# result is its own (no test of one flow ends the other's, none is left INCOMPLETE), in its own
# suite (the classname: the reporter names a test by its title alone), and a failed hook, a
# testFailed of no started test, is a failure of its own.
L=$TOP_SRCDIR/tests/fixtures/real/teamcity/mocha-shards.log
expect_status 0 "$RESMON_RUN" -i 0 -o "$T/tc.json" --junit="$T/tc.xml" -- cat "$L" >/dev/null 2>"$T/tc.err"
J=$T/tc.xml
junit_valid "$J" || fail "teamcity: not valid JUnit"
expect "teamcity: the tests" "$(qn "$J" '//testcase')" 10
expect "teamcity: two passes of one name" "$(qn "$J" '//testcase[@name="adds"][not(*[self::failure or self::error])]')" 2
expect "teamcity: two failures of one name" "$(qn "$J" '//testcase[@name="fails on purpose"]/failure')" 2
for s in "Shard A" "Shard B"; do
    expect "teamcity: $s's adds" "$(qn "$J" "//testsuite[@name='$s']/testcase[@classname='$s'][@name='adds']")" 1
done
expect "teamcity: the hook" \
    "$(qn "$J" '//testcase[contains(@name,"before all")]/failure[starts-with(@message,"FAIL: hook broke")]')" 1
expect "the summary's count" "$(sed -n 's/^  tests  *//p' "$T/tc.err")" "10: 4 PASS, 4 FAIL, 2 SKIP (4 unexpected)"
profile_ok "$T/tc.json" || fail "teamcity: the profile"
echo "teamcity: two flows interleaved, each test its own result"
# jest-teamcity: three tests "adds" in three describe blocks, each in its suite's path
L=$TOP_SRCDIR/tests/fixtures/real/teamcity/jest.log
expect_status 0 "$RESMON_RUN" -i 0 --no-profile --junit="$T/tcj.xml" -- cat "$L" >/dev/null 2>&1
junit_valid "$T/tcj.xml" || fail "jest-teamcity: not valid JUnit"
expect "jest-teamcity: three adds" "$(qn "$T/tcj.xml" '//testcase[@name="adds"]')" 3
for c in __tests__/cart.test.js/Cart/total __tests__/cart.test.js/Cart/items __tests__/stock.test.js/Stock; do
    expect "jest-teamcity: adds in $c" "$(qn "$T/tcj.xml" "//testcase[@classname='$c'][@name='adds']")" 1
done

# ---- go modules: the package is the suite (a real go test -json run) ---------------------------
# Module paths have dots ("example.com/acme/widget/calc"): the suite and classname are the
# package, the name is the test, a subtest keeps its parent's path in its name.
L=$TOP_SRCDIR/tests/fixtures/real/go/module.json.log
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/gomod.json" --junit="$T/gomod.xml" -- cat "$L" >/dev/null
J=$T/gomod.xml
junit_valid "$J" || fail "go module: not valid JUnit"
expect "go suites" "$(qn "$J" //testsuite)" 2
expect "go calc tests" "$(q "$J" '//testsuite[@name="example.com/acme/widget/calc"]/@tests')" 7
expect "go strutil tests" "$(q "$J" '//testsuite[@name="example.com/acme/widget/strutil"]/@tests')" 4
expect "go classname" "$(q "$J" '//testcase[@name="TestDiv"]/@classname')" example.com/acme/widget/calc
expect "go subtest" "$(q "$J" '//testcase[@name="TestAdd/wrong"]/@classname')" example.com/acme/widget/calc
expect "go deep subtest" "$(qn "$J" '//testsuite[@name="example.com/acme/widget/strutil"]/testcase[@name="TestShoutEmpty/nested/deeper"]/failure')" 1
expect "go failures" "$(q "$J" /testsuites/@failures)" 5
echo "go modules: 2 packages, 2 suites"

# ---- a harness's own timeout is the harness's, not the run's (a real ctest log) ----------------
J=$T/ctest.xml
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/ctest.json" --junit="$J" --otlp="$T/ctest.otlp" -- \
    cat "$TOP_SRCDIR/tests/fixtures/real/ctest/quirks-plain.log" >/dev/null
expect "ctest timeout type" "$(q "$J" '//testcase[@name="hangs"]/error/@type')" timeout
expect "ctest timeout message" "$(q "$J" '//testcase[@name="hangs"]/error/@message')" TIMEOUT
grep -q 'still running' "$J" "$T/ctest.otlp" && fail "ctest: a test ctest timed out reads as cut by the run: $(grep 'still running' "$J" "$T/ctest.otlp")"
echo "ctest: its ***Timeout is its own"

# ---- usage ---------------------------------------------------------------------------------
# --no-profile: the report all the same, from a stream of its own that is removed at the end.
mkdir "$T/np" "$T/np-tmp"
(cd "$T/np" && expect_status 0 env TMPDIR="$T/np-tmp" "$RESMON_RUN" -q --no-profile --junit="$T/np.xml" -- \
    cat "$TOP_SRCDIR/tests/fixtures/real/pytest/msgs.log" >/dev/null) || fail "--no-profile: the run"
junit_valid "$T/np.xml" || fail "--no-profile: not valid JUnit"
expect "--no-profile report" "$(q "$T/np.xml" '//testcase[@name="test_assert_eq"]/failure/@message')" \
    "FAIL: assert (1 + 1) == 3"
[ -z "$(ls -A "$T/np" "$T/np-tmp" | grep -v ':$' | grep .)" ] || fail "--no-profile left files: $(ls -A "$T/np" "$T/np-tmp")"
expect_status 125 "$RESMON_RUN" --junit= -- true 2>/dev/null
exit 0

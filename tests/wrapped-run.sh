#!/bin/sh
# ctest and meson running other harnesses (tests/fixtures/real/wrapped: a GoogleTest binary with
# one failure and a script printing TAP with a "not ok", as ctest -V / --output-on-failure and
# meson test -v print them), replayed under resmon-run: what the wrapper shows of a test's output
# is that test's output, so the profile, the summary and the JUnit report hold the wrapper's two
# tests, one failed, as its own report does; no inner test is counted beside them.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

R=$TOP_SRCDIR/tests/fixtures/real/wrapped
for f in ctest-V ctest-oof meson-v meson-v1; do
    P=$T/$f.json J=$T/$f.xml
    "$RESMON_RUN" -o "$P" --junit="$J" -- cat "$R/$f.log" >"$T/$f.out" 2>"$T/$f.err" || fail "$f: $(cat "$T/$f.err")"
    cmp -s "$T/$f.out" "$R/$f.log" || fail "$f: output not passed through"
    "$CHECK" "$P" || fail "$f: invalid profile"
    expect_test "$P" calc_gtest FAIL orange PASS
    expect_test "$P" tap_script PASS green
    [ "$(count "$P" test)" = 2 ] || fail "$f: $(count "$P" test) test markers, the wrapper ran 2"
    grep -q "^  tests        2: 1 PASS, 1 FAIL (1 unexpected)$" "$T/$f.err" ||
        fail "$f: the summary counts otherwise: $(grep tests "$T/$f.err")"
    junit_valid "$J" || fail "$f: invalid JUnit"
    [ "$(grep -c '<testsuite ' "$J")" = 1 ] && grep -q '<testsuite [^>]* tests="2" failures="1" errors="0" skipped="0"' "$J" ||
        fail "$f: JUnit counts otherwise: $(grep '<testsuite ' "$J")"
    [ "$(grep -c '<testcase ' "$J")" = 2 ] || fail "$f: $(grep -c '<testcase ' "$J") JUnit test cases"
    if frontend_available; then
        out=$(FFCHECK_LABELS=Test FFPROF_SAMPLES=10 frontend "$P") || fail "$f: the front-end refuses the profile"
        [ "$(printf '%s\n' "$out" | grep -c '^label Test:test: ')" = 2 ] || fail "$f: the front-end shows other tests: $out"
    fi
    echo "$f: 2 tests, 1 failed"
done
# -V: the "test N" line before the next test's Start is no failure text of the failed one
m=$(val "$(test_line "$T/ctest-V.json" calc_gtest | cut -f5)" message)
[ -z "$m" ] || fail "ctest-V: calc_gtest's message is '$m'"
# --output-on-failure: the GoogleTest output is the ctest test's failure text
grep -q "Calc.FailsOnPurpose" "$T/ctest-oof.xml" || fail "ctest-oof: calc_gtest's failure text lost"
check_every_profile

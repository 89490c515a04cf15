#!/bin/sh
# The JavaScript harnesses end to end: real logs of mocha's spec reporter, jest's --verbose and
# default reporters and vitest's verbose one (tests/fixtures/real/{mocha,jest,vitest}), replayed
# by a small script as the harness wrote them (mocha and vitest on stdout, jest on stderr),
# through resmon-run: the output passes through byte for byte, and the profile (loaded by the front-end's own loader) and the JUnit report hold
# exactly the harness's own report's tests (NAME.tests), each with its status, colour and, for a
# failure, its message.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
R=$TOP_SRCDIR/tests/fixtures/real

# replay NAME STREAM: run the replay of R/NAME.log on STREAM (1 or 2); the profile is $T/NAME.json
replay() {
    _o=$T/$(echo "$1" | tr / -)
    printf 'cat "%s" >&%s\n' "$R/$1.log" "$2" >"$_o.sh"
    "$RESMON_RUN" -q -i 0.05 -o "$_o.json" --junit="$_o.xml" -- sh "$_o.sh" >"$_o.out" 2>"$_o.err" ||
        fail "$1: run failed: $(cat "$_o.err")"
    if [ "$2" = 2 ]; then cmp -s "$_o.err" "$R/$1.log" || fail "$1: stderr is not the log byte for byte"
    else cmp -s "$_o.out" "$R/$1.log" || fail "$1: stdout is not the log byte for byte"; fi
    P=$_o.json
}

# jid ID: ID as a JSON string's content (how test_line finds it)
jid() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

# expect_all NAME [SKIP_STATUS...]: every test of R/NAME.tests is a marker with its status and
# colour (test ids there are the markers' names); no other test marker but the ones given as
# extra ("STATUS<TAB>name" lines in $EXTRA).
expect_all() {
    _n=0
    while IFS="$(printf '\t')" read -r _st _id; do
        _id=$(jid "$_id")
        case $_st in
        PASS) expect_test "$P" "$_id" PASS green ;;
        FAIL) expect_test "$P" "$_id" FAIL orange PASS ;;
        ERROR) expect_test "$P" "$_id" ERROR red PASS ;;
        SKIP) expect_test "$P" "$_id" SKIP yellow ;;
        *) fail "$1: status $_st in the report" ;;
        esac
        _n=$((_n + 1))
    done <"$R/$1.tests"
    _want=$((_n + ${EXTRA:-0}))
    [ "$(count "$P" test)" = "$_want" ] || fail "$1: $(count "$P" test) test markers, the report has $_n (+${EXTRA:-0})"
    echo "$1: $_n tests as the harness reported them"
}

# message_of ID: the message of the test marker of ID
message_of() { val "$(test_line "$P" "$1" | cut -f5)" message; }

# ---- mocha spec, on stdout ----------------------------------------------------------------
replay mocha/spec 1
EXTRA=1 expect_all mocha/spec  # "ok 1 - tap lookalike", a test's output TAP takes (README)
expect_test "$P" "tap lookalike" PASS green
m=$(message_of "Calculator add fails on purpose")
[ "$m" = 'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n2 !== 3' ] ||
    fail "mocha: message of a failed assertion: $m"
[ "$(message_of "$(jid 'Top level with a hook failure "before all" hook for "never runs"')")" = "Error: hook broke" ] ||
    fail "mocha: the hook's message"
[ "$(grep -c '<testcase ' "$T/mocha-spec.xml")" = 15 ] || fail "mocha: JUnit testcases: $(grep -c '<testcase ' "$T/mocha-spec.xml")"
if frontend_available; then frontend "$P" || fail "the front-end does not load $P"; fi

# ---- jest --verbose, on stderr ------------------------------------------------------------
replay jest/verbose 2
expect_all jest/verbose
m=$(message_of "__tests__/calc.test.js/Calculator › throws a multi-line error")
[ "$m" = 'first line\nsecond line\nthird line' ] || fail "jest: message: $m"
[ "$(grep -c '<testcase ' "$T/jest-verbose.xml")" = 16 ] || fail "jest: JUnit testcases"
if frontend_available; then frontend "$P" || fail "the front-end does not load $P"; fi

# ---- jest's default reporter: the failed tests only -----------------------------------------
replay jest/default 2
_n=0
while IFS="$(printf '\t')" read -r _st _id; do
    case $_st in
    FAIL) expect_test "$P" "$(jid "$_id")" FAIL orange PASS; _n=$((_n + 1)) ;;
    ERROR) expect_test "$P" "$_id" ERROR red PASS; _n=$((_n + 1)) ;;
    esac
done <"$R/jest/default.tests"
[ "$(count "$P" test)" = "$_n" ] || fail "jest default: $(count "$P" test) test markers, $_n failed"
m=$(message_of "__tests__/calc.test.js/Calculator › add › fails on purpose")
[ "$m" = 'expect(received).toBe(expected) // Object.is equality\nExpected: 3\nReceived: 2' ] ||
    fail "jest default: message: $m"
echo "jest/default: the $_n failed tests"
if frontend_available; then frontend "$P" || fail "the front-end does not load $P"; fi

# ---- the harness's own count: jest's "Tests:" line counts the tests the default reporter does
# not name; the profile's "Test totals" marker and the summary say what the harness's own report
# says (NAME.totals: total, passed, failed, skipped). The log on stdout, the summary on stderr.
printf 'cat "%s"\n' "$R/jest/default.log" >"$T/totals.sh"
"$RESMON_RUN" -i 0.05 -o "$T/totals.json" -- sh "$T/totals.sh" >"$T/totals.out" 2>"$T/totals.err" ||
    fail "jest totals: run failed: $(cat "$T/totals.err")"
cmp -s "$T/totals.out" "$R/jest/default.log" || fail "jest totals: stdout is not the log byte for byte"
read -r _total _passed _failed _skipped <"$R/jest/default.totals"
t=$(markers "$T/totals.json" "Test totals" | cut -f5)
[ "$(val "$t" harness)" = jest ] && [ "$(val "$t" total)" = "$_total" ] && [ "$(val "$t" passed)" = "$_passed" ] &&
    [ "$(val "$t" failed)" = "$_failed" ] && [ "$(val "$t" skipped)" = "$_skipped" ] ||
    fail "jest totals: the marker says $t; jest's report: $_total $_passed $_failed $_skipped"
grep -q "^  tests        6: 5 FAIL, 1 ERROR (6 unexpected)$" "$T/totals.err" &&
    grep -q "^               jest's own count: 5 failed, 1 skipped, 1 todo, 8 passed, 15 total$" "$T/totals.err" ||
    fail "jest totals: the summary: $(cat "$T/totals.err")"
echo "jest/default: its own count, $_total tests, in the profile and the summary"
if frontend_available; then frontend "$T/totals.json" || fail "the front-end does not load $T/totals.json"; fi

# ---- vitest --reporter=verbose (its results on stdout) --------------------------------------
replay vitest/verbose 1
expect_all vitest/verbose
m=$(message_of "test/other.test.js/Other file > deep > deeper > fails three levels in")
[ "$m" = "expected 'abc' to be 'abd' // Object.is equality" ] || fail "vitest: message: $m"
if frontend_available; then frontend "$P" || fail "the front-end does not load $P"; fi

#!/bin/sh
# The demo suite under resmon-run: every test it runs reports in mozlog, its temporary files are
# gone, its child really crashed, and the hanging test is what the timeout stops (exit 124).
# Event-driven: resmon-run is told to time out (SIGALRM) once the hanging test has started.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
DEMO="$TOP_BUILDDIR/tests/demo/demo-suite"
[ -x "$DEMO" ] || fail "no $DEMO"
mkdir "$T/tmp"
mkfifo "$T/out"

TMPDIR="$T/tmp" DEMO_SCALE=0.05 "$RESMON_RUN" --timeout 120 -o "$T/profile.json" -- "$DEMO" >"$T/out" 2>"$T/err" &
sup=$!
exec 8<"$T/out"
: >"$T/stdout"
while IFS= read -r line <&8; do
    printf '%s\n' "$line" >>"$T/stdout"
    case "$line" in *'"action":"test_start"'*'"test":"demo/hangs-forever"'*) break ;; esac
done
grep -q 'demo/hangs-forever' "$T/stdout" || fail "the hanging test never started: $(cat "$T/err")"
kill -ALRM $sup
cat <&8 >>"$T/stdout"
wait $sup
st=$?
[ $st -eq 124 ] || fail "resmon-run exited $st, expected 124: $(cat "$T/err")"

# Every line on stdout is a mozlog record with a real epoch-ms time.
bad=$(grep -v '^{"action":"[a-z_]*","time":1[0-9]\{12\},' "$T/stdout" | head -1)
[ -z "$bad" ] || fail "not a mozlog line: $bad"
for t in demo/cpu-two-cores demo/memory-200MiB demo/write-50MiB demo/fails demo/child-crashes; do
    grep -q "\"action\":\"test_end\".*\"test\":\"$t\"" "$T/stdout" || fail "no test_end for $t"
done
grep -q '"test":"demo/fails","status":"FAIL","expected":"PASS"' "$T/stdout" || fail "no unexpected FAIL"
grep -q '"action":"crash".*"reason":"SIGSEGV (signal 11)' "$T/stdout" || fail "the child did not segfault"
grep -q '"test":"demo/child-crashes","status":"CRASH"' "$T/stdout" || fail "no CRASH result"
grep -q '"action":"suite_end"' "$T/stdout" && fail "the suite ended although its last test hangs"
[ -z "$(ls -A "$T/tmp")" ] || fail "the demo left files behind: $(ls -A "$T/tmp")"
grep -q 'demo/hangs-forever *waiting' "$T/err" || fail "no progress on stderr"

# Once the run writes its profile, the hanging test is in it, ended by the timeout.
if [ -s "$T/profile.json" ]; then
    grep -q '"demo/hangs-forever"' "$T/profile.json" || fail "the profile does not name the hanging test"
    grep -q '"TIMEOUT"' "$T/profile.json" || fail "the profile has no TIMEOUT status"
    # the test that burns two cores first is drawn: Tree CPU shows all the CPU the tree used
    if command -v node >/dev/null 2>&1; then first_interval "$T/profile.json" demo; fi
else
    echo "note: no profile written by this build; profile checks not run"
fi
exit 0

#!/bin/sh
# GitHub Actions, in a fake environment: under GITHUB_ACTIONS=true the summary is appended to
# $GITHUB_STEP_SUMMARY as Markdown and the timeout and each unexpected result (at most 10 in all,
# the timeout first) are ::error workflow commands in the runner's syntax, each at a line's start
# even after the command's unfinished stderr line, with the failure text and file=/line= where
# the harness gives them; both are written at a stop,
# before the tree is signalled (a job killed then keeps them), the summary replaced at the end
# unless something else wrote after it; --ci=none turns it off, the resmon-timeout form does it
# only with --ci=github; the profile's metadata names the job.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

# 25 unexpected failures (one with the characters the runner escapes), a pass, then a test that
# hangs until the run times out.
cat >"$T/suite.sh" <<EOS
echo '{"action":"test_start","test":"odd/a:b,c%d|e"}'
echo '{"action":"test_end","test":"odd/a:b,c%d|e","status":"FAIL","expected":"PASS"}'
i=0
while [ \$i -lt 24 ]; do
    i=\$((i + 1))
    echo "{\"action\":\"test_start\",\"test\":\"dir/f\$i.js\"}"
    echo "{\"action\":\"test_end\",\"test\":\"dir/f\$i.js\",\"status\":\"FAIL\",\"expected\":\"PASS\"}"
done
echo '{"action":"test_start","test":"dir/ok.js"}'
echo '{"action":"test_end","test":"dir/ok.js","status":"PASS"}'
echo '{"action":"test_start","test":"dir/hangs.js"}'
exec "$HELPER" sleep 300
EOS
# run_hung OUT ARGS...: resmon-run with ARGS on the suite, timed out (SIGALRM, as at --timeout)
# once the stream shows the hung test; stdout in OUT.out, stderr in OUT.err; the status in $st.
run_hung() {
    _o=$1; shift
    env "$@" -i 0 -o "$T/$_o.json" --timeout=1h -- sh "$T/suite.sh" >"$T/$_o.out" 2>"$T/$_o.err" &
    _sup=$!
    stream_shows "$T/$_o.json" '"kind":"test","key":"dir/hangs.js"'
    kill -ALRM $_sup
    wait $_sup
    st=$?
}

printf 'an earlier step wrote this\n' >"$T/summary.md"
run_hung gh GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/summary.md" GITHUB_WORKSPACE="$T" GITHUB_SERVER_URL=https://github.com \
    GITHUB_REPOSITORY=o/r GITHUB_SHA=0123abc GITHUB_RUN_ID=77 GITHUB_RUN_ATTEMPT=2 RUNNER_NAME=runner-3 \
    "$RESMON_RUN"
[ "$st" = 124 ] || fail "status $st"
grep '^::' "$T/gh.err" >"$T/cmds"
cat "$T/cmds"
# Every line is a workflow command in the runner's syntax: a title without a raw ':' or ','
# (escaped as %3A, %2C), a message without a raw CR (no line has one; LF ends the command).
bad=$(grep -v '^::error title=[^:,]*::.' "$T/cmds") && fail "not workflow commands: $bad"
# GitHub shows at most 10 error annotations a step: at the stop the timeout, first, then the
# first 9 results; nothing at the end (the budget is spent); the job summary counts the rest.
[ "$(wc -l <"$T/cmds")" -eq 10 ] || fail "$(wc -l <"$T/cmds") commands, expected 1 + 9"
# (printed at the stop: the exit status is not known yet)
head -n 1 "$T/cmds" | grep -qx "::error title=resmon-run%3A timeout::'sh' timed out after [0-9.]* [a-z]* (sent TERM); still running: dir/hangs.js" ||
    fail "timeout command: $(head -n 1 "$T/cmds")"
sed -n 2p "$T/cmds" | grep -qx '::error title=FAIL odd/a%3Ab%2Cc%25d|e::odd/a:b,c%25d|e: FAIL, expected PASS (after [0-9.]* s)' ||
    fail "escaping: $(sed -n 2p "$T/cmds")"
grep -qx '::error title=FAIL dir/f1.js::dir/f1.js: FAIL, expected PASS (after [0-9.]* s)' "$T/cmds" || fail "first failure"
grep -qx '::error title=FAIL dir/f8.js::.*' "$T/cmds" || fail "9th failure"
! grep -q 'dir/f9.js' "$T/cmds" || fail "more than 9 results"
! grep -q 'unexpected results::' "$T/cmds" || fail "a count line (GitHub would not show it)"
grep -qx 'The first 9 of the 26 unexpected results are annotations (a step shows at most 10).' "$T/summary.md" ||
    fail "the summary does not count the annotations: $(cat "$T/summary.md")"
[ "$(grep -c 'title=resmon-run%3A timeout' "$T/cmds")" = 1 ] || fail "the timeout annotated twice"
# ---- a command whose stderr ended mid-line: the annotation still starts a line ----------------
# The runner reads a command only at a line's start ("progress 42%::error" is no command).
cat >"$T/progress.sh" <<EOS
printf 'progress 42%%' >&2
echo '{"action":"test_start","test":"dir/hangs.js"}'
exec "$HELPER" sleep 300
EOS
env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= "$RESMON_RUN" -q -i 0 -o "$T/prog.json" --timeout=1h -- sh "$T/progress.sh" \
    >"$T/prog.out" 2>"$T/prog.err" &
sup=$!
stream_shows "$T/prog.json" '"kind":"test","key":"dir/hangs.js"'
# the stderr bytes were read before the test's line (they were written first, on another pipe):
# wait until they are passed on
until [ -s "$T/prog.err" ]; do sleep 0.05; done
kill -ALRM $sup
wait $sup
[ $? = 124 ] || fail "progress: status"
# as the runner parses: a line that starts with "::"
grep '^::error' "$T/prog.err" | grep -q "^::error title=resmon-run%3A timeout::'sh' timed out" ||
    fail "progress: no timeout command at a line's start: $(od -c "$T/prog.err" | head)"
head -n 1 "$T/prog.err" | grep -qx 'progress 42%' || fail "progress: the command's bytes changed: $(head -n 1 "$T/prog.err")"
echo "a command's unfinished stderr line: the annotation starts a line of its own"

# ---- the failure's text and where it is: a real pytest run -------------------------------------
L=$TOP_SRCDIR/tests/fixtures/real/pytest/msgs.log
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= "$RESMON_RUN" -q -i 0 -o "$T/py.json" -- cat "$L" \
    >/dev/null 2>"$T/py.err"
grep '^::' "$T/py.err" >"$T/py.cmds"
cat "$T/py.cmds"
[ "$(wc -l <"$T/py.cmds")" -le 10 ] || fail "pytest: more than 10 commands"
grep -q '^::error file=tests/test_msgs.py,line=7,title=FAIL tests/test_msgs.py%3A%3Atest_assert_eq::.*%0Aassert (1 + 1) == 3$' \
    "$T/py.cmds" || fail "pytest: no file=, line= or failure text: $(cat "$T/py.cmds")"
# line= is the report's "tests/test_msgs.py:28: AssertionError" line: where it failed (in a helper
# here), an error in a fixture too
grep -q '^::error file=tests/test_msgs.py,line=28,title=FAIL tests/test_msgs.py%3A%3Atest_in_helper::' \
    "$T/py.cmds" || fail "pytest: the helper's line: $(cat "$T/py.cmds")"
grep -q '^::error file=tests/test_msgs.py,line=35,title=ERROR tests/test_msgs.py%3A%3Atest_error_in_setup::' \
    "$T/py.cmds" || fail "pytest: the fixture's line: $(cat "$T/py.cmds")"

# ---- go: file= in the package's directory, line= (a real go test -json run, a real go -v run) ---
# go names the file by its base name: its package's directory comes from go.mod's module path,
# the module here in the repository's subdirectory widget/.
mkdir -p "$T/repo/widget"
cp "$TOP_SRCDIR/tests/fixtures/real/go/module-src/go.mod" "$T/repo/widget/"
(cd "$T/repo/widget" && expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= GITHUB_WORKSPACE="$T/repo" \
    "$RESMON_RUN" -q -i 0 -o "$T/go.json" -- cat "$TOP_SRCDIR/tests/fixtures/real/go/module.json.log" \
    >/dev/null 2>"$T/go.err") || fail "go: $(cat "$T/go.err")"
grep '^::' "$T/go.err" >"$T/go.cmds"
cat "$T/go.cmds"
grep -qx '::error file=widget/calc/calc_test.go,line=13,title=FAIL example.com/acme/widget/calc/TestAdd/wrong::.*%0Acalc_test.go:13: Add(2, 2) = 4, want 5' \
    "$T/go.cmds" || fail "go: no file= and line= in the package: $(cat "$T/go.cmds")"
grep -q '^::error file=widget/strutil/strutil_test.go,line=15,title=FAIL example.com/acme/widget/strutil/TestShoutEmpty/nested/deeper::' \
    "$T/go.cmds" || fail "go: the deep subtest's file: $(cat "$T/go.cmds")"
# go -v names no package: the base name alone.
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= "$RESMON_RUN" -q -i 0 -o "$T/gov.json" -- \
    cat "$TOP_SRCDIR/tests/fixtures/real/go/msgs.v.log" >/dev/null 2>"$T/gov.err"
grep -q '^::error file=msgs_test.go,line=12,title=FAIL TestErrorf::' "$T/gov.err" ||
    fail "go -v: no file= and line=: $(grep '^::' "$T/gov.err")"
echo "go: file= and line= of the failure, in its package's directory where go.mod says it"

# ---- TAP: Test::More's failure block is the failure's text, its "at FILE line N" the place ------
# A real prove -v run: each test's diagnostics on stderr, printed before prove prints the TAP.
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= "$RESMON_RUN" -q -i 0 -o "$T/tap.json" -- \
    cat "$TOP_SRCDIR/tests/fixtures/real/tap-perl/test-exception.log" >/dev/null 2>"$T/tap.err"
grep '^::' "$T/tap.err" >"$T/tap.cmds"
grep -qx "::error file=t/import.t,line=9,title=FAIL t/import.t/Test%3A%3AException set plan::.*%0AFailed test 'Test::Exception set plan'%0Aat t/import.t line 9.%0A       got: '0'%0A  expected: '2'%0A.*" \
    "$T/tap.cmds" || fail "prove: no failure text, file= or line=: $(cat "$T/tap.cmds")"
[ "$(grep -c '^::error file=t/[a-z_A-Z]*\.t,line=[0-9]*,title=FAIL ' "$T/tap.cmds")" -ge 4 ] ||
    fail "prove: not every failure has its place: $(cat "$T/tap.cmds")"
# Live: the block after its point (stderr merged into the TAP), before it (prove), and unnamed.
if command -v prove >/dev/null 2>&1; then
    mkdir -p "$T/pt/t"
    printf '%s\n' 'use Test::More tests => 3;' 'ok(1, "x");' 'is(1 + 1, 3, "sums");' 'ok(0);' >"$T/pt/t/a.t"
    for how in merged prove; do
        # Test::More exits with the number of failures, prove with 1
        case $how in merged) set -- 2 sh -c 'perl t/a.t 2>&1' ;; prove) set -- 1 prove -v t/a.t ;; esac
        want=$1
        shift
        (cd "$T/pt" && env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= "$RESMON_RUN" -q -i 0 \
            -o "$T/pt-$how.json" --junit="$T/pt-$how.xml" -- "$@" >/dev/null 2>"$T/pt-$how.err")
        st=$?
        [ "$st" = "$want" ] || fail "TAP ($how): status $st, expected $want: $(cat "$T/pt-$how.err")"
        grep -q "^::error file=t/a.t,line=3,title=FAIL .*sums::.*%0AFailed test 'sums'%0Aat t/a.t line 3.%0A       got: '2'%0A  expected: '3'\$" \
            "$T/pt-$how.err" || fail "TAP ($how): the named failure: $(grep '^::' "$T/pt-$how.err")"
        grep -q "^::error file=t/a.t,line=4,title=FAIL .*3::.*%0AFailed test at t/a.t line 4.\$" "$T/pt-$how.err" ||
            fail "TAP ($how): the unnamed failure: $(grep '^::' "$T/pt-$how.err")"
        grep -q "<failure message=\"FAIL: Failed test 'sums'&#10;at t/a.t line 3." "$T/pt-$how.xml" ||
            fail "TAP ($how): no failure text in JUnit: $(cat "$T/pt-$how.xml")"
        [ "$(grep -c '<testcase ' "$T/pt-$how.xml")" = 3 ] || fail "TAP ($how): not 3 tests: $(cat "$T/pt-$how.xml")"
    done
else
    echo "SKIP: TAP live cases: no prove"
fi
# Node's TAP: its YAML location is where a failure happened.
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= "$RESMON_RUN" -q -i 0 -o "$T/node.json" -- \
    cat "$TOP_SRCDIR/tests/fixtures/real/tap-node/runner-output.log" >/dev/null 2>"$T/node.err"
grep -q '^::error file=/tmp/real-fixtures/src/nodejs/node-v18.20.4/test/fixtures/test-runner/output/describe_it.js,line=32,title=FAIL sync throw fail::.*%0Athrown from sync throw fail%0Aat /tmp/.*/describe_it.js:32:1$' \
    "$T/node.err" || fail "node TAP: no location: $(grep '^::' "$T/node.err")"
echo "TAP: the failure's text and place, from Perl's diagnostics and Node's location"

# The command's own output is untouched: no workflow command on stdout.
! grep -q '^::' "$T/gh.out" || fail "workflow commands on stdout"

# The job summary: appended, Markdown, the same story.
head -n 1 "$T/summary.md" | grep -qx 'an earlier step wrote this' || fail "the summary file was not appended to"
grep -qx "### resmon-run: 'sh' timed out after .*; exit status 124" "$T/summary.md" || fail "no heading"
# The summary written at the stop was replaced by the final one: one summary, of the end.
[ "$(grep -c '^### ' "$T/summary.md")" = 1 ] || fail "not one summary: $(cat "$T/summary.md")"
! grep -q '^_Written at the stop' "$T/summary.md" || fail "the summary of the stop was left"
grep -qx '| wall time | .* |' "$T/summary.md" || fail "no wall time"
# The profile as the summary's reader finds it: its path in the workspace, and the run's artifacts.
grep -qx '| profile | gh.json in the workspace (the run'"'"'s artifacts: https://github.com/o/r/actions/runs/77#artifacts) |' \
    "$T/summary.md" || fail "profile row: $(grep '^| profile' "$T/summary.md")"
grep -qx '| tests | 27: 1 PASS, 25 FAIL, 1 TIMEOUT (26 unexpected) |' "$T/summary.md" || fail "tests row"
grep -qx '| FAIL | dir/f1.js | [0-9]* ms |' "$T/summary.md" || fail "unexpected table"
grep -q '^\.\.\. and 18 more$' "$T/summary.md" || fail "no count of the rest"
grep -qx '| dir/hangs.js |' "$T/summary.md" || fail "open tests table"
# A test id cannot break a table (nor format) in Markdown.
grep -qx '| FAIL | odd/a:b,c%d\\|e | [0-9]* ms |' "$T/summary.md" || fail "the odd id in the table: $(grep odd "$T/summary.md")"
# The human summary is still on stderr.
grep -q "^resmon-run: 'sh' timed out" "$T/gh.err" || fail "no summary on stderr"

# The profile's metadata names the CI job with a link back to it.
[ "$(meta "$T/gh.json" ciJobURL)" = "https://github.com/o/r/actions/runs/77/attempts/2" ] ||
    fail "ciJobURL $(meta "$T/gh.json" ciJobURL)"
[ "$(meta "$T/gh.json" sourceURL)" = "https://github.com/o/r/commit/0123abc" ] || fail "sourceURL"
[ "$(meta "$T/gh.json" device)" = "runner-3" ] || fail "device"
[ "$(meta "$T/gh.json" ci)" = "github" ] || fail "ci"

# Sparklines of the tree's CPU and memory, in code spans (a run long enough to be sampled).
: >"$T/spark.md"
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/spark.md" "$RESMON_RUN" -q -i 0.05 -o "$T/spark.json" -- \
    "$HELPER" burn 0.3
grep -q '^| CPU | `[▁▂▃▄▅▆▇█]*` peak [0-9.]* cores |$' "$T/spark.md" || fail "no CPU sparkline: $(cat "$T/spark.md")"
grep -q '^| memory | `[▁▂▃▄▅▆▇█]*` peak [0-9.]* [KMG]iB |$' "$T/spark.md" || fail "no memory sparkline"
grep -qx "### resmon-run: '.*helper' exited with status 0; exit status 0" "$T/spark.md" || fail "exit heading"
[ "$(grep -c '^### ' "$T/spark.md")" = 1 ] || fail "a normal run: not one summary"

# ---- killed right after the stop: the summary and the annotations are already there ---------
# The command, at its TERM, SIGKILLs resmon-run (as a CI does when its own timeout follows ours):
# what resmon-run wrote before signalling is all there is.
cat >"$T/killer.sh" <<EOS
trap 'kill -KILL \$PPID; exit 1' TERM
echo '{"action":"test_start","test":"dir/bad.js"}'
echo '{"action":"test_end","test":"dir/bad.js","status":"FAIL","expected":"PASS"}'
echo '{"action":"test_start","test":"dir/hangs.js"}'
"$HELPER" sleep 300 &
echo \$! >"$T/killer.pid"
wait \$!
EOS
# killed_after NAME SIGNAL ARGS...: killer.sh under resmon-run ARGS, sent SIGNAL once its hung
# test runs; the job summary in NAME.md, stderr in NAME.err, the status in $st.
killed_after() {
    _n=$1 _sig=$2
    shift 2
    : >"$T/$_n.md"
    new_events
    env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/$_n.md" "$RESMON_RUN" -q -i 0 -o "$T/$_n.json" "$@" -- sh "$T/killer.sh" \
        >/dev/null 2>"$T/$_n.err" &
    _sup=$!
    wait_event "ready *" >/dev/null
    stream_shows "$T/$_n.json" '"kind":"test","key":"dir/hangs.js"'
    kill -"$_sig" $_sup
    wait $_sup
    st=$?
    kill -KILL "$(cat "$T/killer.pid")" 2>/dev/null
}
killed_after k ALRM --timeout=1h
[ "$st" = 137 ] || fail "killed after the stop: status $st"
cat "$T/k.md"
[ "$(grep -c '^### ' "$T/k.md")" = 1 ] || fail "killed after the stop: not one summary"
grep -qx "### resmon-run: 'sh' timed out after [^;]* (sent TERM)" "$T/k.md" || fail "killed: heading"
grep -qx '_Written at the stop, before the tree was signalled; the summary of the end replaces it._' "$T/k.md" ||
    fail "killed: not said to be the stop's"
grep -qx '| tests | 1: 1 FAIL (1 unexpected) |' "$T/k.md" || fail "killed: tests row"
grep -qx '| FAIL | dir/bad.js | [0-9]* ms |' "$T/k.md" || fail "killed: the failure"
grep -A4 -x '\*\*Tests still running at the stop\*\*' "$T/k.md" | grep -qx '| dir/hangs.js |' || fail "killed: the open test"
# after the dump: what the hung processes were doing
grep -qx '\*\*Processes alive at the stop, and what they were doing\*\*' "$T/k.md" || fail "killed: no dump in the summary"
grep -q '^| [0-9]* | .* | state S, 1 thread' "$T/k.md" || fail "killed: the processes' states"
grep -qx '::error title=resmon-run%3A timeout::.*still running: dir/hangs.js' "$T/k.err" || fail "killed: no timeout annotation"
grep -qx '::error title=FAIL dir/bad.js::.*' "$T/k.err" || fail "killed: no failure annotation"
echo "killed after the stop: the summary and the annotations were there"
# A stop request (TERM to resmon-run, as a runner cancelling the job sends it) likewise.
killed_after kt TERM
[ "$st" = 137 ] || fail "killed after a stop request: status $st"
grep -qx "### resmon-run: 'sh' stopped: resmon-run received TERM" "$T/kt.md" || fail "stop request: $(cat "$T/kt.md")"
grep -A4 -x '\*\*Tests still running at the stop\*\*' "$T/kt.md" | grep -qx '| dir/hangs.js |' || fail "stop request: the open test"
grep -qx '::error title=FAIL dir/bad.js::.*' "$T/kt.err" || fail "stop request: no failure annotation"
echo "killed after a stop request: likewise"

# ---- the command writes to the job summary itself: its text is kept ------------------------
printf 'before\n' >"$T/own.md"
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/own.md" "$RESMON_RUN" -q -i 0 -o "$T/own.json" -- \
    sh -c 'echo "the command says" >>"$GITHUB_STEP_SUMMARY"'
[ "$(sed -n 1,2p "$T/own.md")" = "$(printf 'before\nthe command says')" ] || fail "own text: $(cat "$T/own.md")"
[ "$(grep -c '^### ' "$T/own.md")" = 1 ] || fail "own text: not one summary"
# ... and after the stop's summary (at its TERM): kept, the final summary after it.
cat >"$T/writer.sh" <<EOS
trap 'echo "written at TERM" >>"\$GITHUB_STEP_SUMMARY"; exit 1' TERM
echo '{"action":"test_start","test":"dir/hangs.js"}'
"$HELPER" sleep 300 &
wait \$!
EOS
: >"$T/w.md"
env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/w.md" "$RESMON_RUN" -q -i 0 -o "$T/w.json" --timeout=1h -- sh "$T/writer.sh" \
    >/dev/null 2>"$T/w.err" &
sup=$!
stream_shows "$T/w.json" '"kind":"test","key":"dir/hangs.js"'
kill -ALRM $sup
wait $sup
[ $? = 124 ] || fail "writer: status"
cat "$T/w.md"
grep -n . "$T/w.md" | grep -E '^[0-9]+:(### |written at TERM|_Written at the stop)' | cut -d: -f2- | cut -c1-20 >"$T/w.order"
cat >"$T/w.want" <<'EOS'
### resmon-run: 'sh'
_Written at the stop
written at TERM
### resmon-run: 'sh'
EOS
cmp -s "$T/w.order" "$T/w.want" || fail "writer: $(cat "$T/w.order")"
[ "$(grep -c '^::error title=resmon-run%3A timeout' "$T/w.err")" = 1 ] || fail "writer: the timeout annotated twice"
echo "the command's own text in the job summary is kept"

# --quiet: no human summary, but the job's outputs still.
: >"$T/q.md"
run_hung quiet GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/q.md" "$RESMON_RUN" -q
! grep -q "^resmon-run: 'sh'" "$T/quiet.err" || fail "-q printed the summary"
grep -q '^::error title=resmon-run%3A timeout::' "$T/quiet.err" || fail "-q: no workflow command"
[ -s "$T/q.md" ] || fail "-q: no job summary"

# --ci=none: nothing of it.
: >"$T/none.md"
run_hung none GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/none.md" "$RESMON_RUN" --ci=none
! grep -q '^::' "$T/none.err" || fail "--ci=none printed workflow commands"
[ ! -s "$T/none.md" ] || fail "--ci=none wrote the job summary"

# Not in GitHub Actions: nothing either.
run_hung plain GITHUB_ACTIONS= GITHUB_STEP_SUMMARY="$T/none.md" "$RESMON_RUN"
! grep -q '^::' "$T/plain.err" || fail "workflow commands outside GitHub Actions"

# The timeout form: only when asked.
expect_status 124 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/none.md" "$TIMEOUT_LINK" 0.01 "$HELPER" sleep 30 2>"$T/t.err"
! grep -q '^::' "$T/t.err" || fail "resmon-timeout printed workflow commands unasked"
[ ! -s "$T/none.md" ] || fail "resmon-timeout wrote the job summary unasked"
: >"$T/t.md"
expect_status 124 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/t.md" "$TIMEOUT_LINK" --ci=github 0.01 "$HELPER" sleep 30 2>"$T/t.err"
grep -qx "::error title=resmon-timeout%3A timeout::'.*helper' timed out after [0-9]* ms (sent TERM)" "$T/t.err" ||
    fail "resmon-timeout --ci=github: $(cat "$T/t.err")"
grep -q '^### resmon-timeout: ' "$T/t.md" || fail "resmon-timeout --ci=github: no job summary"

# The other CIs' variables.
expect_status 0 env GITHUB_ACTIONS= CI_JOB_URL=https://gitlab.example/g/p/-/jobs/9 CI_PROJECT_URL=https://gitlab.example/g/p \
    CI_COMMIT_SHA=feed CI_JOB_ID=9 CI_RUNNER_DESCRIPTION=gl-runner GITLAB_CI=true \
    "$RESMON_RUN" -q -i 0 -o "$T/gl.json" -- true
[ "$(meta "$T/gl.json" ciJobURL)" = "https://gitlab.example/g/p/-/jobs/9" ] || fail "gitlab ciJobURL"
[ "$(meta "$T/gl.json" sourceURL)" = "https://gitlab.example/g/p/-/commit/feed" ] || fail "gitlab sourceURL"
[ "$(meta "$T/gl.json" device)" = "gl-runner" ] || fail "gitlab device"
expect_status 0 env GITHUB_ACTIONS= BUILDKITE=true BUILDKITE_BUILD_URL=https://buildkite.com/o/p/builds/5 BUILDKITE_JOB_ID=j-1 \
    BUILDKITE_AGENT_NAME=bk-agent BUILDKITE_COMMIT=cafe "$RESMON_RUN" -q -i 0 -o "$T/bk.json" -- true
[ "$(meta "$T/bk.json" ciJobURL)" = "https://buildkite.com/o/p/builds/5#j-1" ] || fail "buildkite ciJobURL"
[ "$(meta "$T/bk.json" device)" = "bk-agent" ] || fail "buildkite device"
expect_status 0 env GITHUB_ACTIONS= JENKINS_URL=https://ci.example/ BUILD_URL=https://ci.example/job/x/12/ NODE_NAME=agent-7 \
    GIT_COMMIT=beef BUILD_TAG=jenkins-x-12 "$RESMON_RUN" -q -i 0 -o "$T/jk.json" -- true
[ "$(meta "$T/jk.json" ciJobURL)" = "https://ci.example/job/x/12/" ] || fail "jenkins ciJobURL"
[ "$(meta "$T/jk.json" ci)" = "jenkins" ] || fail "jenkins ci"

# Usage.
expect_status 125 "$RESMON_RUN" --ci=travis -- true 2>"$T/usage.err"
grep -q -- "--ci=travis" "$T/usage.err" || fail "usage: $(cat "$T/usage.err")"
exit 0

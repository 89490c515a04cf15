#!/bin/sh
# An output line the command has begun and not ended: pytest -v prints a test's node id when the
# test starts and its result when it ends, so the stream must name the running test from the
# line's tail (a run killed with -9 recovers it), once, and not again when the line completes;
# resmon-run's summary starts on a line of its own after such a line.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

# ---- kill -9 while a pytest -v test runs, then --recover -----------------------------------------
PY=
for p in python3 /usr/bin/python3; do
    if "$p" -m pytest --version >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -n "$PY" ]; then
    mkdir "$T/py"
    mkfifo "$T/go" "$T/pyev"
    exec 8<>"$T/pyev" # the tests' own events (stream_shows takes fd 9 for its own)
    cat >"$T/py/test_x.py" <<'EOF'
import os, time

def event(text):
    with open(os.environ["PYEV"], "w") as f:
        f.write(text + "\n")

def test_first():
    pass

def test_wait():
    event("waiting")
    with open(os.environ["GO"]) as f:
        f.read()

def test_hang():
    event("hanging")
    time.sleep(600)
EOF
    S="$T/py.json"
    (cd "$T/py" && GO="$T/go" PYEV="$T/pyev" exec "$RESMON_RUN" -i 0.05 -o "$S" -- "$PY" -m pytest -v -p no:cacheprovider \
        test_x.py >"$T/py.out" 2>"$T/py.err") &
    sup=$!
    read -r -t 30 ev <&8 && [ "$ev" = waiting ] || fail "pytest: no 'waiting' from test_wait"
    # The line holds "test_x.py::test_wait " and no newline until the test ends.
    stream_shows "$S" '"type":"open","kind":"test","key":"test_x.py::test_wait"'
    echo go >"$T/go"
    read -r -t 30 ev <&8 && [ "$ev" = hanging ] || fail "pytest: no 'hanging' from test_hang"
    stream_shows "$S" '"type":"open","kind":"test","key":"test_x.py::test_hang"'
    kill -9 $sup
    { wait $sup; } 2>/dev/null
    "$RESMON_RUN" --recover "$S" -o "$T/py-recovered.json" 2>"$T/recover.err" ||
        fail "pytest: --recover failed: $(cat "$T/recover.err")"
    P="$T/py-recovered.json"
    "$CHECK" "$P" || fail "pytest: the recovered profile is invalid"
    expect_test "$P" test_x.py::test_first PASS green
    expect_test "$P" test_x.py::test_wait PASS green
    expect_test "$P" test_x.py::test_hang INCOMPLETE orange
    # each test once: the completed line does not make its test again
    [ "$(count "$P" test)" = 3 ] || fail "pytest: $(count "$P" test) test markers: $(markers "$P" test)"
    [ "$(grep -c '"key":"test_x.py::test_hang"' "$S")" = 1 ] || fail "pytest: test_hang opened more than once: $(grep test_hang "$S")"
    echo "kill -9 during a pytest -v test: recovered as $(val "$(test_line "$P" test_x.py::test_hang | cut -f5)" status)"
    # pytest -q prints no test's name: the summary says no test was recognised, and how to get them
    mkdir "$T/pyq"
    printf 'def test_a():\n    pass\n' >"$T/pyq/test_q.py"
    (cd "$T/pyq" && "$RESMON_RUN" --no-profile -- "$PY" -m pytest -q -p no:cacheprovider test_q.py) \
        >"$T/pyq.out" 2>"$T/pyq.err" || fail "pytest -q failed: $(cat "$T/pyq.err")"
    [ "$(grep -c 'no test line recognised in the output: pytest prints a line per test only with -v' "$T/pyq.err")" = 1 ] ||
        fail "pytest -q: no hint, or not once: $(cat "$T/pyq.err")"
    echo "pytest -q: $(grep -o 'no test line.*' "$T/pyq.err")"
else
    echo "no pytest (python3 -m pytest): the kill -9 and -q cases are not run"
fi

# ---- the same in the parsers' own terms: tails that grow, and a line that ends otherwise ---------
# A pytest -v -s test prints after its node id, chunk by chunk, then its status: one test, and the
# stream opens it once.
S="$T/chunks.json"
new_events
mkfifo "$T/go2"
"$RESMON_RUN" -i 0.05 -o "$S" -- sh -c '
    printf "tests/a.py::test_x "; "$0" wait-file "$1" "\"key\":\"tests/a.py::test_x\"" || exit 3
    printf "dot"; echo mark1 >"$HELPER_EVENTS"; read x <"$2"
    printf "dotPASSED [ 50%%]\n"' "$HELPER" "$S" "$T/go2" >"$T/chunks.out" 2>"$T/chunks.err" &
sup=$!
wait_event "mark1" >/dev/null
cp "$S" "$T/chunks.stream"
echo go >"$T/go2"
wait $sup || fail "chunks: run failed: $(cat "$T/chunks.err")"
P="$S"
"$CHECK" "$P" || fail "chunks: invalid profile"
expect_test "$P" tests/a.py::test_x PASS green
[ "$(count "$P" test)" = 1 ] || fail "chunks: $(count "$P" test) test markers: $(markers "$P" test)"
[ "$(grep -c '"kind":"test"' "$T/chunks.stream")" = 1 ] || fail "chunks: the test opened more than once: $(grep '"kind":"test"' "$T/chunks.stream")"
[ "$(printf 'tests/a.py::test_x dotdotPASSED [ 50%%]\n')" = "$(cat "$T/chunks.out")" ] || fail "chunks: output changed: $(cat "$T/chunks.out")"

# ---- the summary starts on a line of its own -----------------------------------------------------
# stderr ends mid-line at the timeout
alarmed "$RESMON_RUN" -o "$T/s1.json" -- sh -c 'printf "running test_foo ... " >&2; echo "ready $$" >"$HELPER_EVENTS"; exec sleep 60'
[ $? = 124 ] || fail "summary: status"
[ "$(sed -n 1p "$T/alarmed.err")" = "running test_foo ... " ] || fail "summary glued to the command's line: $(head -n 2 "$T/alarmed.err")"
case "$(sed -n 2p "$T/alarmed.err")" in "resmon-run: 'sh' timed out"*) ;; *) fail "summary: $(head -n 2 "$T/alarmed.err")" ;; esac
# stdout ends mid-line, and stdout and stderr are one file
new_events
"$RESMON_RUN" -o "$T/s2.json" -- sh -c 'printf "running test_foo ... "; echo "ready $$" >"$HELPER_EVENTS"; exec sleep 60' >"$T/both" 2>&1 &
sup=$!
wait_event "ready *" >/dev/null
kill -ALRM $sup
wait $sup
[ $? = 124 ] || fail "summary (one file): status"
[ "$(sed -n 1p "$T/both")" = "running test_foo ... " ] || fail "summary glued to stdout's line: $(head -n 2 "$T/both")"
case "$(sed -n 2p "$T/both")" in "resmon-run: 'sh' timed out"*) ;; *) fail "summary (one file): $(head -n 2 "$T/both")" ;; esac
# stdout ends mid-line, stderr is another file: no empty line before the summary there
alarmed "$RESMON_RUN" -o "$T/s3.json" -- sh -c 'printf "running test_foo ... "; echo "ready $$" >"$HELPER_EVENTS"; exec sleep 60'
case "$(sed -n 1p "$T/alarmed.err")" in "resmon-run: 'sh' timed out"*) ;; *) fail "summary (two files): $(head -n 2 "$T/alarmed.err")" ;; esac
[ "$(cat "$T/alarmed.out")" = "running test_foo ... " ] || fail "summary (two files): stdout changed: $(cat "$T/alarmed.out")"
# a line that ended: no empty line
alarmed "$RESMON_RUN" -o "$T/s4.json" -- sh -c 'echo "running test_foo ... " >&2; echo "ready $$" >"$HELPER_EVENTS"; exec sleep 60'
case "$(sed -n 2p "$T/alarmed.err")" in "resmon-run: 'sh' timed out"*) ;; *) fail "summary after a whole line: $(head -n 2 "$T/alarmed.err")" ;; esac
echo "summary on its own line: ok"

#!/bin/sh
# Output paths in a shared directory (sticky, writable by all, as /tmp) where another local user
# put something first. Whatever is found at a path resmon-run writes (the profile's stream, its
# temporaries, <profile>.stacks.txt, --dump-file, JUnit, OTLP, Perfherder, --recover's output,
# $GITHUB_STEP_SUMMARY), resmon-run never hangs on it, never writes into a file that is not its
# own, never reads back a line someone else wrote, and says what it refused. As root the other
# user is real (created when missing) and fs.protected_regular is 0 for the test, so the
# kernel's own rule does not hide resmon-run's; without root, the cases that need a second user
# are skipped (said) and the rest run.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

# Every run bounded: a run that hangs on a file is killed (137) and the case fails, not CI.
bounded() { timeout -s KILL 60 "$@"; }

# A test result in the stream's own format, complete in one line: what a forger would append.
FORGED='{"type":"marker","name":"test","startTime":1.0,"endTime":2.0,"category":2,"data":{"type":"Test","test":"forged/evil.js","name":"evil.js","status":"PASS","color":"green"}}'
# no_forgery PROFILE [JUNIT]: the forged test is in neither.
no_forgery() {
    [ "$(count "$1" test)" -ge 1 ] || fail "$1: no test marker at all"
    markers "$1" test | grep -q forged && fail "$1: a forged line made it into the profile"
    [ $# -lt 2 ] || ! grep -q forged "$2" || fail "$2: a forged line made it into the JUnit report"
}
# say FILE TEXT: resmon-run said TEXT (a fixed string) on stderr, saved in FILE.
say() { grep -qF "$2" "$1" || fail "not said: '$2'; said: $(cat "$1")"; }
# A test that passes, then a wait on a stop.
PERFHERDER=perfherder-data-resource-usage.json
SUITE='echo "{\"action\":\"test_start\",\"test\":\"real/a.js\"}"; echo "{\"action\":\"test_end\",\"test\":\"real/a.js\",\"status\":\"PASS\"}"'

S="$T/shared"
mkdir "$S"
chmod 1777 "$S"
chmod 0711 "$T"

OTHER=""
if [ "$(id -u)" = 0 ]; then
    OTHER=${RESMON_OTHER_USER:-resmon-other}
    id "$OTHER" >/dev/null 2>&1 || useradd --no-create-home --shell /bin/sh "$OTHER" ||
        fail "cannot create the user $OTHER"
    # The kernel's protected_regular would refuse some of these opens itself: off for the test,
    # as on the many systems where it is 0, and back as it was at the end.
    PR=$(cat /proc/sys/fs/protected_regular 2>/dev/null || echo "")
    if [ -n "$PR" ]; then
        echo 0 >/proc/sys/fs/protected_regular 2>/dev/null || PR=""
    fi
    trap '_hf=$?; [ -z "$PR" ] || echo "$PR" >/proc/sys/fs/protected_regular; (exit $_hf); _at_exit' EXIT
fi
# as_other CMD...: CMD as the other user (from a directory it can enter).
as_other() { (cd / && runuser -u "$OTHER" -- "$@"); }
# plant PATH: an empty file of the other user's, writable by all, as a squatter leaves it.
plant() { as_other sh -c 'umask 0; : >"$1"' sh "$1" || fail "cannot plant $1"; }
cd "$S" || fail "cd $S"

# ---- 1. A FIFO at <profile>.stacks.txt or --dump-file: the stop goes on --------------------
# (A FIFO of one's own hangs as well as another's: this needs no second user.)
mkfifo -m 666 "$S/p1.json.stacks.txt" "$S/dump1.txt"
bounded "$RESMON_RUN" -i 0.05 --timeout 0.3 -o "$S/p1.json" -- sleep 100 >/dev/null 2>"$T/e1"
st=$?
[ $st = 124 ] || fail "FIFO at .stacks.txt: status $st (137: it hung), expected 124: $(cat "$T/e1")"
say "$T/e1" "cannot write the dump '$S/p1.json.stacks.txt': it exists and is a FIFO, not a regular file"
[ -p "$S/p1.json.stacks.txt" ] || fail "the FIFO at .stacks.txt was replaced"
profile_ok "$S/p1.json" || fail "FIFO at .stacks.txt: no valid profile"
[ "$(count "$S/p1.json" timeout)" = 1 ] || fail "FIFO at .stacks.txt: the profile has no timeout marker"
bounded "$RESMON_RUN" -i 0.05 --timeout 0.3 --dump-file "$S/dump1.txt" -o "$S/p1b.json" -- sleep 100 >/dev/null 2>"$T/e1b"
st=$?
[ $st = 124 ] || fail "FIFO at --dump-file: status $st (137: it hung), expected 124: $(cat "$T/e1b")"
say "$T/e1b" "cannot write the dump '$S/dump1.txt': it exists and is a FIFO, not a regular file"
profile_ok "$S/p1b.json" || fail "FIFO at --dump-file: no valid profile"

# ...and at every other output: refused at once, said, the run goes on. The CI system's summary
# file, handed over to be appended to, is opened without blocking too.
mkdir -m 1777 "$S/up1"
mkfifo -m 666 "$S/j1.xml" "$S/o1.json" "$S/summary1.md" "$S/up1/$PERFHERDER"
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$S/summary1.md" MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$S/up1" \
    bounded "$RESMON_RUN" --ci=github -i 0.05 --junit "$S/j1.xml" --otlp "$S/o1.json" -o "$S/p1c.json" -- \
    sh -c "$SUITE" >/dev/null 2>"$T/e1c"
st=$?
[ $st = 0 ] || fail "FIFOs at the reports: status $st (137: it hung): $(cat "$T/e1c")"
say "$T/e1c" "cannot write the JUnit report '$S/j1.xml': it exists and is a FIFO, not a regular file"
say "$T/e1c" "cannot write the OpenTelemetry file '$S/o1.json': it exists and is a FIFO, not a regular file"
say "$T/e1c" "cannot write the Perfherder data '$S/up1/$PERFHERDER': it exists and is a FIFO, not a regular file"
say "$T/e1c" "cannot write the job summary to '$S/summary1.md': it exists and is a FIFO, not a regular file"
profile_ok "$S/p1c.json" || fail "FIFOs at the reports: no valid profile"
# --recover's output
mkfifo -m 666 "$S/r1.json"
bounded "$RESMON_RUN" --recover "$S/p1c.json" -o "$S/r1.json" 2>"$T/e1d"
st=$?
[ $st = 125 ] || fail "FIFO at --recover's output: status $st, expected 125: $(cat "$T/e1d")"
say "$T/e1d" "cannot write the profile '$S/r1.json': it exists and is a FIFO, not a regular file"

# ---- 4. Temporary names: nobody can take them beforehand ------------------------------------
# The names a run would have used were it predictable (.NAME.tmpPID.N), all taken, for the
# profile and the JUnit report; the run knows its PID through exec.
sh -c 'i=0; while [ $i -lt 100 ]; do : >"$1/.p4.json.tmp$$.$i"; : >"$1/.j4.xml.tmp$$.$i"; i=$((i + 1)); done
    exec "$2" -i 0.05 --junit "$1/j4.xml" -o "$1/p4.json" -- sh -c "$3"' \
    sh "$S" "$RESMON_RUN" "$SUITE" >/dev/null 2>"$T/e4"
st=$?
[ $st = 0 ] || fail "taken temporary names: status $st: $(cat "$T/e4")"
grep -q "cannot write" "$T/e4" && fail "taken temporary names: $(cat "$T/e4")"
profile_ok "$S/p4.json" || fail "taken temporary names: no valid profile"
[ "$(count "$S/p4.json" test)" = 1 ] || fail "taken temporary names: the profile lacks the test"
grep -q 'a.js' "$S/j4.xml" || fail "taken temporary names: no JUnit report"
# nothing of the run's own is left beside them
[ "$(ls -A "$S" | grep -c '^\.p4\.json\.')" = 100 ] || fail "temporaries left: $(ls -A "$S" | grep '^\.p4')"

# ---- 2. The stream is nobody else's to write -------------------------------------------------
# Even under umask 0, the stream is not writable by others: a line another user appends while
# the command runs is refused by the kernel, and reaches neither the profile nor the JUnit report.
# The command records the stream's mode as it runs.
(umask 0 && bounded "$RESMON_RUN" -i 0.05 --junit "$S/j2.xml" -o "$S/p2.json" -- \
    sh -c "$SUITE; stat -c %a '$S/p2.json' >'$T/mode2'") >/dev/null 2>"$T/e2"
st=$?
[ $st = 0 ] || fail "umask 0: status $st: $(cat "$T/e2")"
case "$(cat "$T/mode2")" in
*[2367]) fail "the stream was writable by others (mode $(cat "$T/mode2"))" ;;
?[2367]?) fail "the stream was writable by its group (mode $(cat "$T/mode2"))" ;;
esac
profile_ok "$S/p2.json" || fail "umask 0: no valid profile"

# A stream of resmon-run's own left writable by all (an earlier run under umask 0), held open by
# someone: the new run's stream is a new file, so what they write through their descriptor
# while the command runs goes nowhere near it.
: >"$S/p2b.json"
chmod 666 "$S/p2b.json"
mkfifo -m 666 "$S/go2b" "$S/done2b" "$S/ready2b"
if [ -n "$OTHER" ]; then
    (cd / && timeout -s KILL 60 runuser -u "$OTHER" -- sh -c 'exec 3>>"$1"; echo ready >"$2/ready2b"; read x <"$2/go2b"; printf "%s\n" "$3" >&3; echo done >"$2/done2b"' \
        sh "$S/p2b.json" "$S" "$FORGED") &
else
    timeout -s KILL 60 sh -c 'exec 3>>"$1"; echo ready >"$2/ready2b"; read x <"$2/go2b"; printf "%s\n" "$3" >&3; echo done >"$2/done2b"' \
        sh "$S/p2b.json" "$S" "$FORGED" &
fi
read x <"$S/ready2b"
bounded "$RESMON_RUN" -i 0.05 --junit "$S/j2b.xml" -o "$S/p2b.json" -- \
    sh -c "$SUITE; echo go >'$S/go2b'; read x <'$S/done2b'" >/dev/null 2>"$T/e2b"
st=$?
wait
[ $st = 0 ] || fail "a descriptor held on the old stream: status $st: $(cat "$T/e2b")"
profile_ok "$S/p2b.json" || fail "a descriptor held on the old stream: no valid profile"
no_forgery "$S/p2b.json" "$S/j2b.xml"

if [ -z "$OTHER" ]; then
    echo "SKIPPED (not root): the cases of files another user planted in the shared directory"
    exit 0
fi

# ---- 2. A stream another user created: refused, the command does not run --------------------
plant "$S/p3.json"
bounded "$RESMON_RUN" -i 0.05 --junit "$S/j3.xml" -o "$S/p3.json" -- sh -c "echo ran >'$T/ran3'" >/dev/null 2>"$T/e3"
st=$?
[ $st = 125 ] || fail "another user's stream: status $st, expected 125: $(cat "$T/e3")"
say "$T/e3" "cannot create the profile '$S/p3.json': it belongs to another user in a shared directory (refused)"
[ -e "$T/ran3" ] && fail "the command ran although the stream was another user's"
[ "$(stat -c %U:%s "$S/p3.json")" = "$OTHER:0" ] || fail "another user's stream was written: $(stat -c %U:%s "$S/p3.json")"
# Appending a forged line to it meanwhile changes nothing: nothing is read from it.
as_other sh -c 'printf "%s\n" "$1" >>"$2"' sh "$FORGED" "$S/p3.json"
[ -e "$S/j3.xml" ] && fail "a JUnit report was written from another user's stream"

# ---- 3. The stop's dump: never into their file ------------------------------------------------
plant "$S/p5.json.stacks.txt"
plant "$S/dump5.txt"
bounded "$RESMON_RUN" -i 0.05 --timeout 0.3 -o "$S/p5.json" -- sleep 100 >/dev/null 2>"$T/e5"
st=$?
[ $st = 124 ] || fail "another user's .stacks.txt: status $st, expected 124: $(cat "$T/e5")"
say "$T/e5" "cannot write the dump '$S/p5.json.stacks.txt': it belongs to another user in a shared directory (refused)"
[ -s "$S/p5.json.stacks.txt" ] && fail "the dump was written into another user's file: $(head -c 300 "$S/p5.json.stacks.txt")"
profile_ok "$S/p5.json" || fail "another user's .stacks.txt: no valid profile"
bounded "$RESMON_RUN" -i 0.05 --timeout 0.3 --dump-file "$S/dump5.txt" -o "$S/p5b.json" -- sleep 100 >/dev/null 2>"$T/e5b"
st=$?
[ $st = 124 ] || fail "another user's --dump-file: status $st, expected 124: $(cat "$T/e5b")"
say "$T/e5b" "cannot write the dump '$S/dump5.txt': it belongs to another user in a shared directory (refused)"
[ -s "$S/dump5.txt" ] && fail "the dump was written into another user's --dump-file"
[ "$(stat -c %U "$S/dump5.txt")" = "$OTHER" ] || fail "another user's --dump-file was replaced"
# The same run without a squatter writes it (the case above fails for the right reason).
bounded "$RESMON_RUN" -i 0.05 --timeout 0.3 --dump-file "$S/dump5c.txt" -o "$S/p5c.json" -- sleep 100 >/dev/null 2>"$T/e5c"
grep -q "^process" "$S/dump5c.txt" || grep -q "pid" "$S/dump5c.txt" || fail "no dump without a squatter: $(cat "$T/e5c")"
[ "$(stat -c %U "$S/dump5c.txt")" = root ] || fail "the dump is not root's"

# ---- The reports and --recover's output: another user's file is neither written nor replaced -
plant "$S/j6.xml"
plant "$S/o6.json"
plant "$S/summary6.md"
mkdir -m 1777 "$S/up6"
plant "$S/up6/$PERFHERDER"
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$S/summary6.md" MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$S/up6" \
    bounded "$RESMON_RUN" --ci=github -i 0.05 --junit "$S/j6.xml" --otlp "$S/o6.json" -o "$S/p6.json" -- \
    sh -c "$SUITE" >/dev/null 2>"$T/e6"
st=$?
[ $st = 0 ] || fail "another user's reports: status $st: $(cat "$T/e6")"
for f in j6.xml o6.json summary6.md "up6/$PERFHERDER"; do
    [ "$(stat -c %U:%s "$S/$f")" = "$OTHER:0" ] || fail "another user's $f was written or replaced"
done
say "$T/e6" "cannot write the JUnit report '$S/j6.xml': it belongs to another user in a shared directory (refused)"
say "$T/e6" "cannot write the OpenTelemetry file '$S/o6.json': it belongs to another user in a shared directory (refused)"
say "$T/e6" "cannot write the Perfherder data '$S/up6/$PERFHERDER': it belongs to another user in a shared directory (refused)"
say "$T/e6" "cannot write the job summary to '$S/summary6.md': it belongs to another user in a shared directory (refused)"
profile_ok "$S/p6.json" || fail "another user's reports: no valid profile"
# A summary file of one's own (as the CI system hands it over) is appended to, as it should be.
echo "earlier step" >"$S/summary6b.md"
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$S/summary6b.md" bounded "$RESMON_RUN" --ci=github -i 0.05 -o "$S/p6b.json" -- \
    sh -c "$SUITE" >/dev/null 2>"$T/e6b" || fail "own summary file: $(cat "$T/e6b")"
[ "$(head -n 1 "$S/summary6b.md")" = "earlier step" ] && [ "$(wc -l <"$S/summary6b.md")" -gt 1 ] ||
    fail "own summary file not appended to: $(cat "$S/summary6b.md")"
# --recover's output
plant "$S/r6.json"
bounded "$RESMON_RUN" --recover "$S/p6.json" -o "$S/r6.json" 2>"$T/e6c"
st=$?
[ $st = 125 ] || fail "another user's --recover output: status $st, expected 125: $(cat "$T/e6c")"
say "$T/e6c" "cannot write the profile '$S/r6.json': it belongs to another user in a shared directory (refused)"
[ "$(stat -c %U:%s "$S/r6.json")" = "$OTHER:0" ] || fail "another user's --recover output was written or replaced"

# ---- 4. Temporary names taken by another user -------------------------------------------------
sh -c 'i=0; while [ $i -lt 100 ]; do runuser -u "$4" -- sh -c ": >\"\$1\"" sh "$1/.p7.json.tmp$$.$i" || exit 99; i=$((i + 1)); done
    exec "$2" -i 0.05 -o "$1/p7.json" -- sh -c "$3"' sh "$S" "$RESMON_RUN" "$SUITE" "$OTHER" >/dev/null 2>"$T/e7"
st=$?
[ $st = 0 ] || fail "another user's temporary names: status $st: $(cat "$T/e7")"
grep -q "cannot write" "$T/e7" && fail "another user's temporary names: $(cat "$T/e7")"
profile_ok "$S/p7.json" || fail "another user's temporary names: no valid profile"
[ "$(stat -c %U "$S/p7.json")" = root ] || fail "the profile is not root's"

exit 0

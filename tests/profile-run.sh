#!/bin/sh
# The profile end to end: what a normal run leaves, the stream while the command runs, kill -9 at
# any point followed by --recover, the stop sequence (the profile is complete BEFORE any child is
# signalled), a full disk, symlinks and unwritable directories, --no-profile and --recover.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
unset MOZ_UPLOAD_DIR TASKCLUSTER_WORKER_TYPE MOZ_SOURCE_REPO MOZ_SOURCE_CHANGESET TASK_ID

# ---- a normal run ------------------------------------------------------------------------------
P="$T/normal.json"
before=$(date +%s%3N)
TASKCLUSTER_WORKER_TYPE=t-linux-itest MOZ_SOURCE_REPO=https://hg.example.org/repo \
    MOZ_SOURCE_CHANGESET=0123abcd TASK_ID=TaskIdItest42 \
    "$RESMON_RUN" -i 0.05 -o "$P" --meta foo=bar --meta "spaced key=a value" -- "$HELPER" exit 3
st=$?
after=$(date +%s%3N)
[ "$st" = 3 ] || fail "normal run: status $st"
"$CHECK" "$P" || fail "normal run: invalid profile"
[ "$(meta "$P" product)" = helper ] || fail "product: $(meta "$P" product)"
[ "$(meta "$P" foo)" = bar ] || fail "--meta foo: $(meta "$P" foo)"
[ "$(meta "$P" "spaced key")" = "a value" ] || fail "--meta with a space: $(meta "$P" "spaced key")"
[ "$(meta "$P" device)" = t-linux-itest ] || fail "device: $(meta "$P" device)"
[ "$(meta "$P" sourceURL)" = https://hg.example.org/repo/rev/0123abcd ] || fail "sourceURL: $(meta "$P" sourceURL)"
[ "$(meta "$P" appBuildID)" = TaskIdItest42 ] || fail "appBuildID: $(meta "$P" appBuildID)"
# the machine's physical cores, as lscpu counts them (distinct core and socket of each online CPU)
if command -v lscpu >/dev/null 2>&1; then
    cores=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
    [ "$(meta "$P" physicalCPUs)" = "$cores" ] || fail "physicalCPUs $(meta "$P" physicalCPUs), lscpu: $cores"
fi
start=$(meta "$P" startTime)
ge "$start" "$((before - 1000))" && ge "$((after + 1000))" "$start" ||
    fail "meta.startTime $start is not the wall clock of the run ($before..$after)"
cmdm=$(markers "$P" command)
[ "$(printf '%s\n' "$cmdm" | wc -l)" = 1 ] || fail "not one command marker: $cmdm"
[ "$(val "$(printf '%s\n' "$cmdm" | cut -f5)" exit)" = "status 3" ] || fail "command exit: $cmdm"
# Only one of MOZ_SOURCE_REPO/MOZ_SOURCE_CHANGESET: no sourceURL.
MOZ_SOURCE_REPO=https://hg.example.org/repo "$RESMON_RUN" -i 0 -o "$P" -- true || fail "run without a changeset"
meta "$P" sourceURL >/dev/null 2>&1 && fail "sourceURL without MOZ_SOURCE_CHANGESET"

# --product; a command that dies of a signal (resmon-run dies of it too).
st=$(sh -c '"$@"; echo $?' sh "$RESMON_RUN" -i 0 -o "$P" --product=Firefox-CI -- "$HELPER" killself TERM)
[ "$st" = 143 ] || fail "killself TERM: status $st"
"$CHECK" "$P" || fail "killself: invalid profile"
[ "$(meta "$P" product)" = Firefox-CI ] || fail "--product: $(meta "$P" product)"
[ "$(val "$(markers "$P" command | cut -f5)" exit)" = "signal TERM" ] || fail "command exit: $(markers "$P" command)"

# The default path: $MOZ_UPLOAD_DIR/profile_resource-usage.json, else ./resmon-profile.json.
mkdir "$T/cwd" "$T/upload"
(cd "$T/cwd" && MOZ_UPLOAD_DIR="$T/upload" "$RESMON_RUN" -i 0 -- true) || fail "run with MOZ_UPLOAD_DIR"
"$CHECK" "$T/upload/profile_resource-usage.json" || fail "no valid profile in MOZ_UPLOAD_DIR"
[ -z "$(ls -A "$T/cwd")" ] || fail "MOZ_UPLOAD_DIR set, yet written here: $(ls -A "$T/cwd")"
(cd "$T/cwd" && "$RESMON_RUN" -i 0 -- true) || fail "run without MOZ_UPLOAD_DIR"
"$CHECK" "$T/cwd/resmon-profile.json" || fail "no valid ./resmon-profile.json"

# A real timeout: 124, and the timeout marker says why.
expect_status 124 "$RESMON_RUN" -i 0.05 -t 0.3 -o "$P" -- "$HELPER" sleep 60
"$CHECK" "$P" || fail "timeout: invalid profile"
[ "$(val "$(markers "$P" timeout | cut -f5)" reason)" = timeout ] || fail "timeout marker: $(markers "$P" timeout)"

# ---- the stop sequence -------------------------------------------------------------------------
# The helper opens a test and waits; when it gets its signal it looks at the profile first and
# announces what it found: "full" proves the profile was finalized before any child was signalled.
# While it waits, the file is a valid stream. (A long --grace: a helper slow to exit on a loaded
# machine, e.g. in a sanitizer build, must not be KILLed, which resmon-run would then mirror.)
for how in TERM INT HUP QUIT timeout parent; do
    P="$T/stop-$how.json"
    new_events
    case $how in
    parent)
        # A parent that started resmon-run and dies: resmon-run's stdout is a FIFO, whose EOF
        # says resmon-run (and everything it started) is gone.
        mkfifo "$T/stop.fifo"
        sh -c '"$@"; echo "exit $?"' sh "$RESMON_RUN" -i 0.05 --grace=30 -o "$P" -- "$HELPER" sigcheck "$P" 30 \
            >"$T/stop.fifo" 2>"$T/stop.err" &
        parent=$!
        timeout 60 cat "$T/stop.fifo" >"$T/stop.out" &
        reader=$!
        ;;
    *)
        "$RESMON_RUN" -i 0.05 --grace=30 -o "$P" -- "$HELPER" sigcheck "$P" 30 >"$T/stop.out" 2>"$T/stop.err" &
        sup=$!
        ;;
    esac
    hpid=$(wait_event "ready *" | cut -d' ' -f2)
    [ -n "$hpid" ] || fail "$how: the command did not start; resmon-run said: $(cat "$T/stop.err")"
    "$CHECK" --stream --allow-torn "$P" || fail "$how: not a valid stream while the command runs"
    t0=$(now_ns)
    case $how in
    timeout) kill -ALRM $sup ;;
    parent) kill -9 $parent ;;
    *) kill -$how $sup ;;
    esac
    ev=$(wait_event "saw *")
    set -- $ev
    [ "$3" = full ] || fail "$how: the child was signalled before the profile was finalized (it saw: $3)"
    want=$how
    case $how in timeout | parent) want=TERM ;; esac
    [ "$2" = "$want" ] || fail "$how: the child got SIG$2, expected SIG$want"
    dt=$(( ($4 - t0) / 1000000 ))
    echo "stop by $how: complete profile on disk ${dt} ms after the signal"
    [ "$dt" -lt 5000 ] || fail "$how: ${dt} ms from the signal to a complete profile"
    case $how in
    parent)
        wait $reader || fail "parent: resmon-run did not end"
        rm -f "$T/stop.fifo"
        ;;
    timeout) wait $sup; st=$?; [ "$st" = 124 ] || fail "timeout: status $st" ;;
    *) wait $sup; st=$?; [ "$st" = 0 ] || fail "$how: status $st (the command exited 0)" ;;
    esac
    "$CHECK" "$P" || fail "$how: invalid final profile"
    tm=$(markers "$P" timeout)
    [ "$(printf '%s\n' "$tm" | wc -l)" = 1 ] || fail "$how: not one timeout marker: $tm"
    td=$(printf '%s\n' "$tm" | cut -f5)
    cause=signal
    case $how in timeout) cause=timeout ;; parent) cause=parent-died ;; esac
    [ "$(val "$td" reason)" = $cause ] || fail "$how: timeout marker reason: $td"
    case "$td" in *'"openTests":["stop/open-test.js"]'*) ;; *) fail "$how: open test not named: $td" ;; esac
    case "$td" in *"[$hpid,\""*) ;; *) fail "$how: live process $hpid not named: $td" ;; esac
    status=INCOMPLETE
    [ $how = timeout ] && status=TIMEOUT
    color=orange
    [ $how = timeout ] && color=purple
    expect_test "$P" stop/open-test.js $status $color
    [ "$(count "$P" kill)" -ge 1 ] || fail "$how: no kill marker in the final profile"
    # at the stop, after the dump, at the end
    [ "$(count "$P" finalize)" = 3 ] || fail "$how: $(count "$P" finalize) finalizations, expected 3"
    ended=$cause
    [ $cause = signal ] && ended=stopped
    [ "$(val "$(markers "$P" command | cut -f5)" reason)" = $ended ] || fail "$how: command marker: $(markers "$P" command)"
done

# ---- a stop after thousands of tests ----------------------------------------------------------
# The converter follows the stream during the run (profile.h): 3000 finished tests (12 000 stream
# lines, many follower updates), then one open test and a TERM. Both finalizations must hold every
# test once, and the open one as INCOMPLETE.
P="$T/stop-many.json"
new_events
awk 'BEGIN { for (i = 0; i < 3000; i++) {
    printf "{\"action\":\"test_start\",\"test\":\"many/t%d.js\"}\n", i
    printf "{\"action\":\"test_end\",\"test\":\"many/t%d.js\",\"status\":\"PASS\"}\n", i } }' >"$T/many.log"
"$RESMON_RUN" -i 0.05 --grace=30 -o "$P" -- sh -c 'cat "$2"; exec "$0" sigcheck "$1" 30' "$HELPER" "$P" "$T/many.log" \
    >"$T/many.out" 2>"$T/many.err" &
sup=$!
wait_event "ready *" >/dev/null
kill -TERM $sup
set -- $(wait_event "saw *")
[ "$3" = full ] || fail "many: the child was signalled before the profile was finalized (it saw: $3)"
wait $sup || fail "many: status $? (the command exited 0)"
"$CHECK" "$P" || fail "many: invalid final profile"
[ "$(count "$P" test)" = 3001 ] || fail "many: $(count "$P" test) test markers, expected 3001"
[ "$(markers "$P" test | grep -c '"status":"PASS"')" = 3000 ] || fail "many: not 3000 PASS tests"
expect_test "$P" many/t2999.js PASS green
expect_test "$P" stop/open-test.js INCOMPLETE orange
[ "$(count "$P" finalize)" = 3 ] || fail "many: $(count "$P" finalize) finalizations, expected 3"

# ---- kill -9 at many points, then --recover --------------------------------------------------
# The helper prints mozlog tests (start, burn, end) and announces every line; resmon-run samples
# every 20 ms. Killed after K lines, the file is a stream (maybe torn) that --recover turns into a
# valid profile in which the tests the stream left open end INCOMPLETE.
open_total=0
for k in 1 2 3 4 5 6 7 8 9 10; do
    S="$T/killed-$k.json"
    new_events
    "$RESMON_RUN" -i 0.02 -o "$S" -- "$HELPER" steps 6 0.04 >/dev/null 2>&1 &
    sup=$!
    wait_event "step $k" >/dev/null
    kill -9 $sup
    wait $sup 2>/dev/null
    "$CHECK" --stream --allow-torn "$S" || fail "kill after $k: not a stream"
    opened=$(grep -c '"type":"open","kind":"test"' "$S")
    closed=$(grep -c '"type":"close","kind":"test"' "$S")
    ended=$(grep -c '"type":"marker","name":"test"' "$S")
    cp "$S" "$T/killed.copy"
    "$RESMON_RUN" --recover "$S" -o "$S.out" 2>"$T/recover.err" || fail "kill after $k: --recover failed: $(cat "$T/recover.err")"
    cmp -s "$S" "$T/killed.copy" || fail "kill after $k: --recover -o modified its input"
    "$CHECK" "$S.out" || fail "kill after $k: the recovered profile is invalid"
    inc=$(markers "$S.out" test | grep -c '"status":"INCOMPLETE"')
    [ "$inc" = $((opened - closed)) ] || fail "kill after $k: $inc INCOMPLETE tests, $((opened - closed)) left open"
    [ "$(count "$S.out" test)" = $((ended + inc)) ] || fail "kill after $k: test markers lost"
    [ "$(count "$S.out" "CPU Use")" -ge "$(grep -c '"type":"marker","name":"CPU Use"' "$S")" ] || fail "kill after $k: samples lost"
    open_total=$((open_total + inc))
    # In place as well.
    "$RESMON_RUN" --recover "$S" 2>/dev/null || fail "kill after $k: in-place --recover failed"
    "$CHECK" "$S" || fail "kill after $k: the profile recovered in place is invalid"
done
[ "$open_total" -gt 0 ] || fail "no kill caught a test open: the INCOMPLETE path was not exercised"

# ---- --recover and --no-profile ----------------------------------------------------------------
cp "$T/normal.json" "$T/full.json"
"$RESMON_RUN" --recover "$T/full.json" 2>"$T/recover.err" || fail "--recover of a full profile failed"
grep -q "already a full profile" "$T/recover.err" || fail "--recover of a full profile does not say so: $(cat "$T/recover.err")"
cmp -s "$T/full.json" "$T/normal.json" || fail "--recover modified a full profile"
printf 'garbage\n\001\002\n' >"$T/garbage"
expect_status 125 "$RESMON_RUN" --recover "$T/garbage" 2>/dev/null
expect_status 125 "$RESMON_RUN" --recover "$T/no-such-file" 2>/dev/null

mkdir "$T/np" "$T/np-upload"
(cd "$T/np" && MOZ_UPLOAD_DIR="$T/np-upload" "$RESMON_RUN" --no-profile -i 0.02 -- "$HELPER" suite mozlog 0.01 >/dev/null) ||
    fail "--no-profile run failed"
(cd "$T/np" && "$RESMON_RUN" -o x.json --no-profile -- true) || fail "-o then --no-profile failed"
[ -z "$(ls -A "$T/np")" ] && [ -z "$(ls -A "$T/np-upload")" ] || fail "--no-profile wrote: $(ls -A "$T/np" "$T/np-upload")"

# ---- symlinks and unwritable places: refuse (125) before starting the command ----------------
echo precious >"$T/target"
ln -s "$T/target" "$T/link.json"
expect_status 125 "$RESMON_RUN" -o "$T/link.json" -- sh -c "echo ran >'$T/ran'" 2>/dev/null
[ -e "$T/ran" ] && fail "the command ran although the profile path is a symlink"
[ "$(cat "$T/target")" = precious ] || fail "written through a symlink"
ln -s "$T/absent" "$T/dangling.json"
expect_status 125 "$RESMON_RUN" -o "$T/dangling.json" -- sh -c "echo ran >'$T/ran'" 2>/dev/null
[ -e "$T/ran" ] && fail "the command ran although the profile path is a dangling symlink"
[ -e "$T/absent" ] && fail "a file was created through a dangling symlink"

exit 0

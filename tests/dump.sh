#!/bin/sh
# The dump at a stop: what every process of the tree was doing, recorded after the first
# finalization and before the first signal, in the profile (a thread per process, a sample per
# thread; a marker per process), the summary and the text file. The helper's threads are stuck in
# known functions (tests/stuck.c); it says "ready" once each is where it stays.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
STUCK="$HELPERS/stuck"

grep -q '^#define HAVE_LIBDW 1' "$TOP_BUILDDIR/config.h" 2>/dev/null || skip "built without libdw: no stacks"

# stopped N HOW CMD...: run the supervisor CMD in the background, wait for N "ready stuck" events,
# then stop it: HOW is ALRM (time out now) or TERM (a stop request). Returns its exit status;
# output in $T/out, $T/err.
stopped() {
    _n=$1 _how=$2
    shift 2
    new_events
    "$@" >"${STOPPED_OUT:-$T/out}" 2>"$T/err" &
    _sup=$!
    _i=0
    while [ $_i -lt "$_n" ]; do
        wait_event "ready stuck *" >/dev/null
        _i=$((_i + 1))
    done
    kill -"$_how" $_sup
    wait $_sup
}

# stack_of FILE PID FUNCTION: the samples of PID in FILE's profile include FUNCTION's frame; prints
# the sample's line (pid TAB frames innermost first < ... < "thread TID NAME").
stack_of() {
    "$CHECK" --samples "$1" | awk -F'\t' -v p="$2" -v f="$3" '
        $1 == p { n = split($2, fr, " < "); for (i = 1; i <= n; i++) if (fr[i] == f) { print; found = 1 } }
        END { exit !found }'
}

# ---- a timeout: every thread's stack, in the profile, the summary and the text file ------------
stopped 1 ALRM "$RESMON_RUN" --timeout=1h -i 0 -o "$T/p.json" -- "$STUCK"
st=$?
[ $st -eq 124 ] || fail "timeout: status $st, expected 124: $(cat "$T/err")"
pid=$(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/out")
[ -n "$pid" ] || fail "no pid from the helper"
"$CHECK" "$T/p.json" >/dev/null || fail "the profile is not valid"
"$CHECK" --samples "$T/p.json" >"$T/samples"
[ "$(awk -F'\t' -v p="$pid" '$1 == p' "$T/samples" | sort -u | wc -l)" -eq 4 ] || fail "not one stack per thread: $(cat "$T/samples")"
for f in stuck_main_wait stuck_in_mutex stuck_in_read stuck_spinning; do
    line=$(stack_of "$T/p.json" "$pid" $f) || fail "no sample of $pid in $f: $(cat "$T/samples")"
    # the thread's own root, under the right process
    case "$line" in *" < thread "[0-9]*" "*) ;; *) fail "$f: no thread root: $line" ;; esac
done
# a thread of the profile per OS thread, under its own name and tid, the process's threads under
# its pid; each spans the process's life (the process started with the command, not at the dump),
# and its stacks' category is its state: the one spinning thread Running, the rest Sleeping
"$CHECK" --threads "$T/p.json" | awk -F'\t' -v p="$pid" '$1 == p' >"$T/threads"
[ "$(cut -f3,6 "$T/threads" | sort | tr '\t\n' ':,')" = "in-mutex:Sleeping,in-read:Sleeping,spinning:Running,stuck:Sleeping," ] ||
    fail "not a thread per OS thread with its name and state: $(cat "$T/threads")"
[ "$(cut -f2 "$T/threads" | sort -u | wc -l)" -eq 4 ] && grep -q "^$pid	$pid	stuck	" "$T/threads" ||
    fail "the threads' tids: $(cat "$T/threads")"
# (the category as the front-end takes it: the frames'.) Nothing is known of a thread before its
# first stack: a sample without one where it started, or the front-end hatches that time as "this
# buffer was empty"
awk -F'\t' '$7 != $5 { bad = 1 } END { exit bad || NR != 4 }' "$T/threads" ||
    fail "a thread's samples do not start where it did: $(cat "$T/threads")"
# The process's start (/proc's, floored to a clock tick) lies between the command's start and
# when the sampler first saw the process (its process marker); a thread's start within its life.
tick=$((1000 / $(getconf CLK_TCK)))
cmd_at=$(markers "$T/p.json" command | cut -f2)
seen_at=$(markers "$T/p.json" process | awk -F'\t' -v p="\"pid\":$pid," 'index($5, p) { print $2 }')
dump_at=$(markers "$T/p.json" "process dump" | cut -f2 | head -n 1)
awk -F'\t' -v c="$cmd_at" -v s="$seen_at" -v d="$dump_at" -v t="$tick" '
    { if ($4 < c - t || $4 > s + t || $5 < $4 || $5 > d) bad = 1 }
    END { exit bad || s == "" }' "$T/threads" ||
    fail "the threads do not start with the process (command at $cmd_at, seen at $seen_at, dump at $dump_at): $(cat "$T/threads")"
# the front-end shows them so: its threads, under their names, a process track each with its own
if frontend_available; then
    node "$FFPROF" "$T/p.json" >"$T/ff.json"
    node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
        const pid = process.argv[2];
        const th = r.threads.filter((t) => t.pid === pid);
        const names = th.map((t) => t.name).sort().join(",");
        if (!r.ok || names !== "in-mutex,in-read,spinning,stuck") throw new Error("threads: " + names);
        const main = th.find((t) => t.isMainThread);
        if (!main || main.tid !== Number(pid) || th.some((t) => t.processStartupTime !== main.processStartupTime))
            throw new Error("process start: " + JSON.stringify(th));
        const track = r.tracks.global.find((g) => g.pid === pid);
        if (!track || track.mainThreadIndex !== main.index || track.local.length !== 3 || track.hidden)
            throw new Error("tracks: " + JSON.stringify(track));
        // killed at the stop: the track ends where the process did (its process marker ends)
        const end = Number(process.argv[3]);
        if (!(end > Number(process.argv[4])) || th.some((t) => Math.abs(t.processShutdownTime - end) > 0.002))
            throw new Error("process end " + end + ": " + JSON.stringify(th));
    ' "$T/ff.json" "$pid" "$(markers "$T/p.json" process | awk -F'\t' -v p="\"pid\":$pid," 'index($5, p) { print $3 }')" \
        "$dump_at" || fail "the front-end's threads and tracks"
fi
# the main thread is the process's own (tid = pid), and it waits in the join
stack_of "$T/p.json" "$pid" stuck_main_wait | grep -q "< thread $pid stuck\$" || fail "main thread's tid"
stack_of "$T/p.json" "$pid" main | grep -q stuck_main_wait || fail "main < stuck_main_wait"
# the blocked ones are in the C library's waits under them
stack_of "$T/p.json" "$pid" stuck_in_mutex | grep -q "pthread_mutex_lock < stuck_in_mutex" || fail "mutex frames"
stack_of "$T/p.json" "$pid" stuck_in_read | grep -q "read < stuck_in_read" || fail "read frames"
# one marker per process, before the first signal, and a profile written with it before it too
d=$(markers "$T/p.json" "process dump" | awk -F'\t' -v p="\"pid\":$pid," 'index($5, p)')
[ -n "$d" ] || fail "no process dump marker for $pid"
case "$d" in *'"state":"S (sleeping)"'*'"wchan":'*'"syscall":'*'"threads":4'*'"topFrames":"'*stuck_main_wait*) ;;
*) fail "dump marker: $d" ;; esac
dump_at=$(printf '%s\n' "$d" | cut -f2)
kill_at=$(markers "$T/p.json" kill | head -n 1 | cut -f2)
fin=$(markers "$T/p.json" finalize | cut -f2,5 | grep '"reason":"dump"' | cut -f1)
[ -n "$fin" ] || fail "no finalization after the dump"
awk -v d="$dump_at" -v f="$fin" -v k="$kill_at" 'BEGIN { exit !(d <= f && f <= k) }' ||
    fail "dump $dump_at, its finalization $fin, first kill $kill_at: not in that order"
# the text file, beside the profile
[ -f "$T/p.json.stacks.txt" ] || fail "no text file"
for f in stuck_main_wait stuck_in_mutex stuck_in_read stuck_spinning; do
    grep -q " $f\$" "$T/p.json.stacks.txt" || fail "text file lacks $f"
done
grep -q "^process $pid (parent [0-9]*) state S: $STUCK\$" "$T/p.json.stacks.txt" || fail "text file: process line"
# the summary: the state and top frames of the process
grep -q "^  stacks  *$T/p.json.stacks.txt\$" "$T/err" || fail "summary: no stacks path"
grep -q "state S, 4 threads" "$T/err" || fail "summary: no state: $(cat "$T/err")"
for f in stuck_in_mutex stuck_in_read stuck_spinning; do
    grep -q "$f" "$T/err" || fail "summary lacks $f"
done

# ---- since when a thread has not run: its stack spans that time ----------------------------------
# The helper's threads are where they stay before it says "ready"; it then prints nothing, and the
# output timeout stops the run a second later: every thread but the spinning one has not run for
# that second at least, by the scheduler's own clock (CONFIG_SCHED_DEBUG's /proc/PID/sched). The
# helper runs on one CPU: a sleeping thread that the scheduler moves to another CPU has no time to
# show (the kernel forgets it), which a busy machine does now and then.
if [ -r /proc/self/sched ]; then
    "$RESMON_RUN" --output-timeout=1s -i 0 -o "$T/idle.json" -- "$STUCK" pinned >"$T/idle.out" 2>"$T/idle.err"
    st=$?
    [ $st -eq 124 ] || fail "idle: status $st: $(cat "$T/idle.err")"
    pid=$(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/idle.out")
    "$CHECK" "$T/idle.json" >/dev/null || fail "idle: invalid profile"
    # the text: each sleeping thread's time, none for the one on the CPU
    grep '^  thread ' "$T/idle.json.stacks.txt" >"$T/idle.threads"
    awk '/state R for/ { bad = 1 }
         /state S/ { if (!match($0, /state S for [0-9.]+ s/)) { bad = 1; next }
                     v = substr($0, RSTART + 12, RLENGTH - 14) + 0; if (v < 0.9 || v > 60) bad = 1; n++ }
         END { exit bad || n != 3 }' "$T/idle.threads" ||
        fail "idle: not each sleeping thread's time since it ran: $(cat "$T/idle.threads")"
    # the profile: a sleeping thread's stack from then to the dump, a second and more; the spinning
    # thread's at the dump only
    dump_at=$(markers "$T/idle.json" "process dump" | cut -f2 | head -n 1)
    "$CHECK" --sample-times "$T/idle.json" | awk -F'\t' -v p="$pid" '$1 == p' >"$T/idle.samples"
    awk -F'\t' -v d="$dump_at" '{ root = $2; sub(/.* < thread /, "", root); n[root]++
        if (!(root in first)) first[root] = $3 }
        END { for (r in n) { sleeping = r !~ / spinning$/
                if (sleeping && (n[r] != 2 || first[r] > d - 900)) bad = 1
                if (!sleeping && n[r] != 1) bad = 1; k++ }
              exit bad || k != 4 }' "$T/idle.samples" ||
        fail "idle: the stacks do not span the time the threads had not run (dump at $dump_at): $(cat "$T/idle.samples")"
    # and the process's marker says it of its main thread, as the front-end shows it
    markers "$T/idle.json" "process dump" | grep -q '"idle":[0-9]' || fail "idle: the dump marker has no idle time"
    if frontend_available; then
        node "$FFPROF" "$T/idle.json" >"$T/ffi.json"
        node -e '
            const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
            const d = (r.samples["ProcessDump:process dump"] || [])[0];
            const v = d && d.fields["Main thread not run for (idle, duration)"];
            if (!r.ok || !/^[0-9.]+s$/.test(v || "") || parseFloat(v) < 0.9) throw new Error(JSON.stringify(d));
        ' "$T/ffi.json" || fail "idle: the front-end does not show the main thread's idle time"
    fi
else
    echo "SKIP: since when a thread has not run: this kernel has no /proc/PID/sched (CONFIG_SCHED_DEBUG)"
fi

# ---- a stop request, three processes of the tree: each dumped under its own pid -------------
stopped 3 TERM "$RESMON_RUN" -i 0 -o "$T/s.json" --dump-file="$T/s.txt" -- "$STUCK" 2
st=$?
[ $st -eq 143 ] || fail "stop request: status $st"
"$CHECK" "$T/s.json" >/dev/null || fail "stop request: invalid profile"
for p in $(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/out"); do
    stack_of "$T/s.json" "$p" stuck_in_read >/dev/null || fail "stop request: no stack of $p"
    grep -q "^process $p " "$T/s.txt" || fail "--dump-file lacks $p"
done
[ ! -e "$T/s.json.stacks.txt" ] || fail "--dump-file: the default file was written too"
# in the front-end: the run's own track first (the dumped processes are not its parent process),
# and three processes of one command line told apart by their pids, no two tracks of one name
if frontend_available; then
    node "$FFPROF" "$T/s.json" >"$T/ffs.json"
    node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
        const pids = process.argv.slice(2);
        const g = r.tracks.global;
        if (!r.ok || g[0].name !== "resmon-run") throw new Error("first track: " + g.map((t) => t.name));
        const names = g.map((t) => t.name);
        if (new Set(names).size !== names.length) throw new Error("two tracks of one name: " + names);
        for (const p of pids)
            if (!g.some((t) => t.pid === p && t.name.endsWith(" (pid " + p + ")")))
                throw new Error("no track named with pid " + p + ": " + names);
        const th = r.threads.filter((t) => pids.includes(t.pid));
        if (th.some((t) => t.processType === "default")) throw new Error("a dumped process as the parent process");
    ' "$T/ffs.json" $(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/out") || fail "stop request: the front-end's tracks"
fi

# ---- an output timeout: the helper is silent after its "ready" line ---------------------------
# (a second of silence: the helper says nothing until its threads are stuck, which a loaded
# machine may take a while to reach)
"$RESMON_RUN" --output-timeout=1 -i 0 -o "$T/o.json" -- "$STUCK" >"$T/out" 2>"$T/err"
[ $? -eq 124 ] || fail "output timeout: status"
stack_of "$T/o.json" "$(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/out")" stuck_in_mutex >/dev/null ||
    fail "output timeout: no stacks"

# ---- a thread in uninterruptible sleep (a vfork's parent): not traced; its kernel frames, from
# its kernel stack (root) or its wchan, are its sample. The vfork's child is dumped as any process.
stopped 1 ALRM "$RESMON_RUN" --timeout=1h -i 0 -o "$T/v.json" -- "$STUCK" vfork
[ $? -eq 124 ] || fail "vfork: status"
pid=$(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/out")
grep -q "^  thread [0-9]* (in-vfork) state D\( for [0-9.]* s\)\?: in uninterruptible sleep (D): not traced\$" "$T/v.json.stacks.txt" ||
    fail "vfork: the D thread is not said: $(cat "$T/v.json.stacks.txt")"
"$CHECK" --samples "$T/v.json" | awk -F'\t' -v p="$pid" '$1 == p' >"$T/samples"
[ "$(sort -u "$T/samples" | wc -l)" -eq 5 ] || fail "vfork: not a stack per thread: $(cat "$T/samples")"
grep -q "^$pid	[^<]* \[kernel\] < .*thread [0-9]* in-vfork\$" "$T/samples" ||
    fail "vfork: no kernel frames for the D thread: $(cat "$T/samples")"
stack_of "$T/v.json" "$pid" stuck_in_read >/dev/null || fail "vfork: the other threads lost their stacks"
# the summary keeps four threads' stacks: the running one first (here the fifth listed), and says
# how many it left out
sed -n "/^ *alive then  *$pid /,/^ *(.* left out)\$/p" "$T/err" | grep '^  *[0-9]* [a-z-]* ([A-Z]): ' >"$T/lines"
head -n 1 "$T/lines" | grep -q " spinning (R): stuck_spinning < " ||
    fail "vfork: the running thread is not the summary's first: $(cat "$T/err")"
[ "$(wc -l <"$T/lines")" -eq 4 ] && grep -q "^ *(1 more thread left out)\$" "$T/err" ||
    fail "vfork: the summary does not say a thread was left out: $(cat "$T/err")"
"$CHECK" --samples "$T/v.json" | awk -F'\t' -v p="$pid" '$1 != p' | grep -q " stuck_in_vfork < " ||
    fail "vfork: the child is not in stuck_in_vfork: $("$CHECK" --samples "$T/v.json")"

# ---- an orphan (double fork), reparented to resmon-run: traced too. A ptrace policy such as Yama's
# ptrace_scope=1 admits descendants only, and the orphan is one: resmon-run is its subreaper.
stopped 2 ALRM "$RESMON_RUN" --timeout=1h -i 0 -o "$T/r.json" -- "$STUCK" orphan
[ $? -eq 124 ] || fail "orphan: status"
# the orphan is the copy, waiting where the command spins; both are resmon-run's children now
orphan=$("$CHECK" --samples "$T/r.json" | awk -F'\t' '$2 ~ / stuck_waiting < / { print $1 }' | sort -u)
[ -n "$orphan" ] || fail "orphan: not dumped: $("$CHECK" --samples "$T/r.json")"
grep -q "^process $orphan (parent $_sup) " "$T/r.json.stacks.txt" ||
    fail "orphan: not reparented to resmon-run ($_sup): $(grep '^process' "$T/r.json.stacks.txt")"
stack_of "$T/r.json" "$orphan" stuck_in_read >/dev/null || fail "orphan: no stack of $orphan"

# ---- names from the debuginfo file a stripped executable's .gnu_debuglink names, beside it or in
# its .debug directory, as GDB looks for it. Without that file the copy names nothing of its own.
if command -v objcopy >/dev/null 2>&1; then
    mkdir -p "$T/dl/.debug"
    objcopy --only-keep-debug "$STUCK" "$T/stuck.debug" &&
        objcopy --strip-all --add-gnu-debuglink="$T/stuck.debug" "$STUCK" "$T/dl/stuck" || fail "objcopy"
    for where in none "$T/dl" "$T/dl/.debug"; do
        [ $where = none ] || cp "$T/stuck.debug" "$where/"
        stopped 1 ALRM "$RESMON_RUN" --timeout=1h -i 0 -o "$T/dl.json" -- "$T/dl/stuck"
        [ $? -eq 124 ] || fail "debuglink: status"
        pid=$(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/out")
        if [ $where = none ]; then
            ! stack_of "$T/dl.json" "$pid" stuck_in_read >/dev/null ||
                fail "debuglink: a stripped copy named its functions without its debuginfo"
        else
            stack_of "$T/dl.json" "$pid" stuck_in_read >/dev/null ||
                fail "debuglink: no names from $where/stuck.debug: $("$CHECK" --samples "$T/dl.json")"
            rm "$where/stuck.debug"
        fi
    done
else
    echo "SKIP: debuglink (no objcopy)"
fi

# ---- --dump-budget=0: the /proc facts, and the cut-off said ----------------------------------
stopped 1 ALRM "$RESMON_RUN" --timeout=1h -i 0 --dump-budget=0 -o "$T/z.json" -- "$STUCK"
[ $? -eq 124 ] || fail "budget 0: status"
grep -q "the budget cut off the stacks of 1 process and 0 threads" "$T/z.json.stacks.txt" || fail "budget 0: text"
grep -q "stacks: left out: the budget ran out" "$T/z.json.stacks.txt" || fail "budget 0: the process's line"
grep -q "wchan: " "$T/z.json.stacks.txt" || fail "budget 0: no /proc facts"
grep -q "dump  *the budget cut off the stacks of 1 process" "$T/err" || fail "budget 0: summary"
[ "$(count "$T/z.json" "dump cut off")" -eq 1 ] || fail "budget 0: no warning marker"
[ -z "$("$CHECK" --samples "$T/z.json")" ] || fail "budget 0: samples"

# ---- --no-dump; resmon-timeout: off unless asked ---------------------------------------------
stopped 1 ALRM "$RESMON_RUN" --timeout=1h -i 0 --no-dump -o "$T/n.json" -- "$STUCK"
[ $? -eq 124 ] || fail "--no-dump: status"
[ ! -e "$T/n.json.stacks.txt" ] && [ "$(count "$T/n.json" "process dump")" -eq 0 ] || fail "--no-dump dumped"
stopped 1 ALRM "$TIMEOUT_LINK" -o "$T/t.json" 1h "$STUCK"
[ $? -eq 124 ] || fail "resmon-timeout: status"
[ ! -e "$T/t.json.stacks.txt" ] && [ "$(count "$T/t.json" "process dump")" -eq 0 ] || fail "resmon-timeout dumped"
stopped 1 ALRM "$TIMEOUT_LINK" -o "$T/u.json" --dump-budget=1s 1h "$STUCK"
[ $? -eq 124 ] || fail "resmon-timeout --dump-budget: status"
stack_of "$T/u.json" "$(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/out")" stuck_in_mutex >/dev/null ||
    fail "resmon-timeout --dump-budget: no stacks"
# ---- the test each process ran under; the hung test's processes first in the summary --------
# The harness starts a helper before any test, then the test starts and runs its own. Both are
# ordered on /proc's clock (ticks): the test's start line is printed a tick after the first
# helper started, and the second is started only once resmon-run has passed that line on (it
# took the line's arrival time before).
mkfifo "$T/pass" "$T/go"
cat >"$T/suite.sh" <<EOS
"$STUCK" &
first=\$!
echo "first helper \$first"
st=\$(sed 's/.*) //' /proc/\$first/stat | cut -d' ' -f20)
until [ "\$(awk '{ printf "%d", \$1 * 100 }' /proc/uptime)" -gt \$((st + 2)) ]; do :; done
echo '{"action":"suite_start","source":"s"}'
echo '{"action":"test_start","test":"dir/hangs.js"}'
read go <"$T/go"
"$STUCK"
EOS
(while IFS= read -r l; do
    printf '%s\n' "$l"
    case $l in *test_start*) echo go >"$T/go" ;; esac
done <"$T/pass" >"$T/passed") &
reader=$!
STOPPED_OUT="$T/pass" stopped 2 ALRM "$RESMON_RUN" --timeout=1h -i 0 -o "$T/m.json" -- sh "$T/suite.sh"
[ $? -eq 124 ] || fail "test attribution: status"
wait $reader
# (by pid: the two may say "ready" in either order)
before=$(sed -n 's/^first helper \([0-9]*\)$/\1/p' "$T/passed")
during=$(sed -n 's/^ready stuck \([0-9]*\)$/\1/p' "$T/passed" | grep -vx "$before" | tail -n 1)
[ -n "$before" ] && [ "$before" != "$during" ] || fail "test attribution: pids: $(cat "$T/passed")"
markers "$T/m.json" "process dump" | grep "\"pid\":$during," | grep -q '"test":"dir/hangs.js"' ||
    fail "the test's process lacks its test: $(markers "$T/m.json" "process dump")"
! markers "$T/m.json" "process dump" | grep "\"pid\":$before," | grep -q '"test":' ||
    fail "the helper started before the test has one"
grep -q "during test: dir/hangs.js" "$T/m.json.stacks.txt" || fail "text file: no test"
# the summary: the test's process first, its test named
first_alive=$(sed -n 's/^  alive then   \([0-9]*\) .*/\1/p' "$T/err")
[ "$first_alive" = "$during" ] || fail "summary: $first_alive listed first, not $during: $(cat "$T/err")"
grep -q "state S, 4 threads, in dir/hangs.js" "$T/err" || fail "summary: no test on the state line"
echo "dump: ok"

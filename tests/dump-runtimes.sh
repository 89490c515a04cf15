#!/bin/sh
# --dump=go,java,python: after the stacks, the runtimes' own dumps (Go: every goroutine on
# SIGQUIT; a JVM: a thread dump on SIGQUIT; CPython: every thread's traceback on SIGABRT, with
# PYTHONFAULTHANDLER set for the command), passed through and kept in the process's marker and
# the text file. Each program (tests/runtimes/) says "ready stuck PID" once it is where it stays.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
R="$TOP_SRCDIR/tests/runtimes"

# dumped NAME CMD...: time the program out once it is ready, with --dump=NAME; $T/NAME.json. The
# budget is ample: a loaded machine takes seconds over a JVM's twenty threads' stacks, and the
# runtime's dump comes after them; a dump ends when the runtime's is complete, not at the budget.
dumped() {
    _name=$1
    shift
    new_events
    "$RESMON_RUN" --timeout=1h -i 0 --dump="$_name" --dump-budget=60s -o "$T/$_name.json" -- "$@" >"$T/$_name.out" 2>"$T/$_name.err" &
    _sup=$!
    _pid=$(wait_event "ready stuck *" 120 | cut -d' ' -f3)
    kill -ALRM $_sup
    wait $_sup
    _st=$?
    [ $_st -eq 124 ] || fail "$_name: status $_st: $(cat "$T/$_name.err")"
    "$CHECK" "$T/$_name.json" >/dev/null || fail "$_name: invalid profile"
    markers "$T/$_name.json" "process dump" | grep "\"pid\":$_pid," >"$T/$_name.marker" ||
        fail "$_name: no marker for $_pid"
    grep -q "\"runtime\":\"$_name\"" "$T/$_name.marker" || fail "$_name: not recognised: $(cat "$T/$_name.marker")"
}

# expect NAME TEXT WHERE: the runtime's dump holds TEXT, in the marker and the text file, and it
# was passed through (WHERE: out or err)
expect() {
    sed -n 's/.*"runtimeDump"://p' "$T/$1.marker" | grep -q "$2" || fail "$1: the marker's dump lacks $2: $(cat "$T/$1.marker")"
    grep -q "^    | .*$2" "$T/$1.json.stacks.txt" || fail "$1: the text file lacks $2"
    grep -q "$2" "$T/$1.$3" || fail "$1: $2 was not passed through on std$3"
}

ran=0
py=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ -n "$py" ]; then
    dumped python "$py" "$R/hang.py"
    expect python "stuck_in_python_wait" err
    expect python "main_waits_forever" err
    ran=$((ran + 1))
fi
if command -v java >/dev/null 2>&1; then
    dumped java java "$R/Hang.java"
    expect java 'stuck-worker' out
    expect java "Hang.stuckInJavaWait" out
    ran=$((ran + 1))
fi
# a Go program is recognised by its ELF sections, read with libelf (there with libdw)
if command -v go >/dev/null 2>&1 && grep -q '^#define HAVE_LIBDW 1' "$TOP_BUILDDIR/config.h" &&
    GOCACHE="$(go_cache)" GOPATH="$T/go" go build -o "$T/hang-go" "$R/hang.go" 2>"$T/go-build.err"; then
    dumped go "$T/hang-go"
    expect go "main.stuckInGoLock" err
    ran=$((ran + 1))
fi
# a stripped Go binary (no .symtab, as the go tool ships) still has its frames named, from the
# function table the Go runtime reads (.gopclntab)
if command -v go >/dev/null 2>&1 && grep -q '^#define HAVE_LIBDW 1' "$TOP_BUILDDIR/config.h" &&
    GOCACHE="$(go_cache)" GOPATH="$T/go" go build -ldflags="-s -w" -o "$T/hang-go-s" "$R/hang.go" 2>"$T/go-build.err"; then
    ! readelf -S "$T/hang-go-s" 2>/dev/null | grep -q ' \.symtab ' || fail "go build -ldflags=-s left a .symtab"
    new_events
    "$RESMON_RUN" --timeout=1h -i 0 -o "$T/gos.json" -- "$T/hang-go-s" >/dev/null 2>"$T/gos.err" &
    sup=$!
    wait_event "ready stuck *" 120 >/dev/null
    kill -ALRM $sup
    wait $sup
    grep -q '^    #[0-9]*  0x[0-9a-f]* runtime\.futex$' "$T/gos.json.stacks.txt" ||
        fail "stripped go: runtime.futex not named: $(grep '#' "$T/gos.json.stacks.txt" | head -5)"
    ! grep -q 'hang-go-s+0x' "$T/gos.json.stacks.txt" || fail "stripped go: unnamed frames: $(grep 'hang-go-s+0x' "$T/gos.json.stacks.txt" | head -3)"
    echo "stripped go: frames named from .gopclntab"
fi
# under `go test`: the test binary is dumped (the leaves first), and the go tool, which relays
# SIGQUIT to it and prints nothing of its own, is not signalled nor waited on (with a budget of
# 1 min, the stop would otherwise last it all)
if command -v go >/dev/null 2>&1 && grep -q '^#define HAVE_LIBDW 1' "$TOP_BUILDDIR/config.h"; then
    cp -R "$R/gotest" "$T/gotest"
    chmod -R u+w "$T/gotest"
    new_events
    (cd "$T/gotest" && GOCACHE="$(go_cache)" GOPATH="$T/go" GOFLAGS=-mod=mod GOPROXY=off \
        exec "$RESMON_RUN" --timeout=1h -i 0 --dump=go --dump-budget=60s -o "$T/gotest.json" -- \
        go test -count=1 . >"$T/gotest.out" 2>"$T/gotest.err") &
    sup=$!
    tbin=$(wait_event "ready stuck *" 300 | cut -d' ' -f3)
    kill -ALRM $sup
    wait $sup
    st=$?
    [ $st -eq 124 ] || fail "go test: status $st: $(cat "$T/gotest.err")"
    "$CHECK" "$T/gotest.json" >/dev/null || fail "go test: invalid profile"
    markers "$T/gotest.json" "process dump" >"$T/gotest.markers"
    grep "\"pid\":$tbin," "$T/gotest.markers" | grep '"runtime":"go"' | sed -n 's/.*"runtimeDump"://p' |
        grep -q 'hang\.stuckInGoTest' || fail "go test: the test binary's goroutines are not in its marker: $(cat "$T/gotest.markers")"
    grep -q 'hang\.stuckInGoTest' "$T/gotest.out" || fail "go test: the goroutines were not passed through"
    grep '"runtime":"go"' "$T/gotest.markers" | grep -q 'not signalled: the go tool' ||
        fail "go test: the go tool is not named as such: $(cat "$T/gotest.markers")"
    ms=$(awk -F'\t' 'NR == 1 { printf "%d", $3 - $2 }' "$T/gotest.markers")
    [ "$ms" -lt 30000 ] || fail "go test: the dump took ${ms} ms of its 60 s budget"
    echo "go test: the test binary dumped, the go tool not waited on (the dump took $ms ms)"
    ran=$((ran + 1))
fi
# ---- a runtime whose dump never ends: the dump is a phase of the run's one loop, so a second
# stop request, or the parent's death, ends it at once (what it printed so far kept) and goes on
# to the stop and its KILL, long before the budget (60 s) ends. The run's stderr is read from a
# FIFO: the first line of the dump passed through there has been kept, and its end is the run's.

# cut_short HOW: stop the run (ALRM or TERM), and once the dump has begun, HOW (INT, TERM, or
# parent: the parent dies); $T/deaf-$HOW.json, the ms from HOW to the run's end in $ms
cut_short() {
    _how=$1
    new_events
    rm -f "$T/deaf.err"
    mkfifo "$T/deaf.err"
    sh -c '"$@" 2>"$0.err" & exec sleep 3600' "$T/deaf" "$RESMON_RUN" --timeout=1h -i 0 \
        --dump=python --dump-budget=60s -o "$T/deaf-$_how.json" -- "$py" "$R/deaf.py" >/dev/null &
    _parent=$!
    exec 7<"$T/deaf.err"
    _dpid=$(wait_event "ready stuck *" 120 | cut -d' ' -f3)
    # the run is the runtime's parent (read while the runtime lives, so no other process's pid: a
    # file the wrapper writes may not be there yet, and an earlier run's pid may be a stranger's)
    _sup=$(sed -n 's/.*) . \([0-9]*\) .*/\1/p' "/proc/$_dpid/stat" 2>/dev/null)
    [ -n "$_dpid" ] && [ -n "$_sup" ] || { kill -KILL $_parent; fail "deaf $_how: the runtime was not ready"; }
    case $_how in INT) kill -TERM "$_sup" ;; *) kill -ALRM "$_sup" ;; esac
    # the dump begins within its budget (60 s) or never: a run that ignores the program's TERM
    # would then never end, so the test ends it (its parent's death) and says what it saw
    _until=$(($(date +%s) + 90))
    while :; do
        _left=$((_until - $(date +%s)))
        if [ "$_left" -le 0 ] || ! read -r -t "$_left" _line <&7; then
            kill -KILL $_parent
            fail "deaf $_how: the dump never began: $(cat "$T/deaf-$_how.err" 2>/dev/null)"
        fi
        printf '%s\n' "$_line" >>"$T/deaf-$_how.err"
        case "$_line" in *"deaf: dump begun"*) break ;; esac
    done
    _t0=$(date +%s%N)
    case $_how in parent) kill -KILL $_parent ;; *) kill -"$_how" "$_sup" ;; esac
    cat <&7 >>"$T/deaf-$_how.err" # to the run's end: its stderr is only its own
    _t1=$(date +%s%N)
    exec 7<&-
    [ "$_how" = parent ] || kill $_parent
    wait $_parent 2>/dev/null
    ms=$(((_t1 - _t0) / 1000000))
    ! alive "$_dpid" || fail "deaf $_how: the runtime $_dpid outlived the run"
    profile_ok "$T/deaf-$_how.json" || fail "deaf $_how: invalid profile"
    markers "$T/deaf-$_how.json" "process dump" | grep "\"pid\":$_dpid," >"$T/deaf-$_how.marker" ||
        fail "deaf $_how: no marker for $_dpid"
    sed -n 's/.*"runtimeDump"://p' "$T/deaf-$_how.marker" | grep -q "deaf: dump begun" ||
        fail "deaf $_how: what it printed was not kept: $(cat "$T/deaf-$_how.marker")"
    grep -A1 "^  python's own dump: cut short: the run was asked to stop at once\$" "$T/deaf-$_how.json.stacks.txt" |
        grep -q "^    | deaf: dump begun" || fail "deaf $_how: the text file: $(cat "$T/deaf-$_how.json.stacks.txt")"
    # the stop's signal, then the KILL of a second request (the parent's death is one): the
    # program ignores TERM, so without that KILL a timeout's stop would never end
    markers "$T/deaf-$_how.json" kill | cut -f5 | tr -d '\n' | grep -q '"signal":"TERM".*"signal":"KILL","reason":"second stop request"' ||
        fail "deaf $_how: not TERM then KILL: $(markers "$T/deaf-$_how.json" kill)"
    [ "$ms" -lt 15000 ] || fail "deaf $_how: the run ended $ms ms after $_how (the budget is 60 s)"
    echo "deaf $_how: the dump cut short, the run ended $ms ms after it"
}
if [ -n "$py" ]; then
    cut_short INT
    cut_short TERM
    cut_short parent
fi

# not asked: nothing is signalled, the runtime is not named
if [ -n "$py" ]; then
    new_events
    "$RESMON_RUN" --timeout=1h -i 0 -o "$T/plain.json" -- "$py" "$R/hang.py" >/dev/null 2>"$T/plain.err" &
    sup=$!
    wait_event "ready stuck *" 120 >/dev/null
    kill -ALRM $sup
    wait $sup
    ! markers "$T/plain.json" "process dump" | grep -q '"runtime"' || fail "a runtime asked without --dump"
    ! grep -q "Fatal Python error" "$T/plain.err" || fail "python dumped without --dump"
fi
[ $ran -gt 0 ] || skip "no python3, java or go here"
echo "dump-runtimes: $ran runtimes dumped"

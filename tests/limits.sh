#!/bin/sh
# The resource limits (--memory-limit, --cpu-limit, --tasks-limit), in each tier resmon-run can
# use here: each one reached stops the run like a timeout (exit 124, or the command's status with
# --preserve-status), the stop marker is named for the limit ("memory limit")
# and says the figure set and the one reached, the command marker and
# the summary name the reason, the test running then is closed, and nothing of the tree survives.
# Who enforces what depends on the machine (-v says it: the kernel where a memory or pids
# controller can hold the tree, else sampling): both answers are held to what they must do.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

tiers=subreaper
cgroup_available && tiers="$tiers cgroup"

# stop_name REASON: the stop marker's name for a limit (what the front-end's rows show).
stop_name() { case $1 in memory) echo "memory limit" ;; cpu) echo "CPU limit" ;; tasks) echo "tasks limit" ;; esac; }

# stopped FILE REASON [FIGURE]: the run's profile says it was stopped at REASON's limit (FIGURE:
# the limit set, as the marker's labels say it), named for it, not "timeout", in the front-end.
stopped() {
    _c=$(markers "$1" command | cut -f5)
    [ "$(val "$_c" reason)" = "$2" ] || fail "$1: command reason '$(val "$_c" reason)', want $2: $_c"
    _n=$(stop_name "$2")
    _t=$(markers "$1" "$_n" | cut -f5)
    [ "$(val "$_t" reason)" = "$2" ] || fail "$1: $_n reason '$(val "$_t" reason)', want $2: $(markers "$1" Timeout)"
    has_key "$_t" limit || fail "$1: the $_n marker names no limit: $_t"
    [ -z "${3:-}" ] || [ "$(val "$_t" stop)" = "$_n $3" ] || fail "$1: the stop reads '$(val "$_t" stop)', want '$_n $3'"
    [ "$(count "$1" timeout)" = 0 ] || fail "$1: a limit stop named timeout"
    if frontend_available; then
        _f=$(frontend "$1") || fail "$1: the front-end does not load it"
        case "$_f" in *"rows="*"Tasks / $_n (1)"*) ;; *) fail "$1: no '$_n' row in the marker chart: $_f" ;; esac
        case "$_f" in *"/ timeout ("*) fail "$1: a 'timeout' row in the marker chart: $_f" ;; esac
    fi
    # finalized before the stop signal: the first finalize comes before the first kill step
    _fin=$(markers "$1" finalize | head -n 1 | cut -f2)
    _kill=$(markers "$1" kill | head -n 1 | cut -f2)
    [ -n "$_fin" ] && [ -n "$_kill" ] && ge "$_kill" "$_fin" || fail "$1: no finalize before the first signal"
}

# survivors PATTERN: no process whose command line holds PATTERN is left.
no_survivors() {
    for _p in $(pgrep -f "$1" 2>/dev/null); do
        alive "$_p" && fail "a process of the tree survived: $_p $(tr '\0' ' ' <"/proc/$_p/cmdline")"
    done
    return 0
}

for tier in $tiers; do
    R="$RESMON_RUN -v -i 0.05 --containment=$tier"

    # memory: a process holding 128 MiB against a 32 MiB limit; the command (a shell) would go on.
    st=0
    $R -o "$T/mem-$tier.json" --memory-limit=32M -- sh -c "'$HELPER' alloc 128 30; '$HELPER' sleep 30" \
        >"$T/mem.out" 2>"$T/mem.err" || st=$?
    [ "$st" = 124 ] || fail "$tier: memory limit: exit $st: $(cat "$T/mem.err")"
    stopped "$T/mem-$tier.json" memory "32 MiB (33.6 MB)"
    lim=$(val "$(markers "$T/mem-$tier.json" "memory limit" | cut -f5)" limit)
    if grep -q "memory 32 MiB: enforced by the kernel.*stopped at its high mark" "$T/mem.err"; then
        # cgroup v2: stopped at memory.high (28 MiB), before the OOM killer, the tree alive: the
        # dump has the process that held the memory
        how="kernel, high mark"
        case "$lim" in *"memory passed 28 MiB (29.4 MB), near the limit of 32 MiB (33.6 MB): stopped before the kernel's OOM killer"*) ;;
        *) fail "$tier: memory (high mark): limit text '$lim'" ;; esac
        [ "$(count "$T/mem-$tier.json" "OOM kill")" = 0 ] || fail "$tier: memory (high mark): the OOM killer acted first"
    elif grep -q "memory 32 MiB: enforced by the kernel.*the tree held at it" "$T/mem.err"; then
        # cgroup v1: the leaf's OOM killer off, the kernel held the tree at the limit, alive
        how="kernel, held"
        case "$lim" in *"memory reached the limit of 32 MiB (33.6 MB), held there by the kernel: stopped before any OOM kill"*) ;;
        *) fail "$tier: memory (held): limit text '$lim'" ;; esac
        [ "$(count "$T/mem-$tier.json" "OOM kill")" = 0 ] || fail "$tier: memory (held): an OOM kill"
    elif grep -q "memory 32 MiB: enforced by the kernel" "$T/mem.err"; then
        fail "$tier: memory (kernel): sampling on, yet the OOM killer was left to act first: $(cat "$T/mem.err")"
    else
        how=sampled
        grep -q "memory 32 MiB: the tree's summed RSS checked at each sample" "$T/mem.err" ||
            fail "$tier: memory: -v does not say who enforces it: $(cat "$T/mem.err")"
        case "$lim" in *"past the limit of 32 MiB (33.6 MB)"*) ;; *) fail "$tier: memory (sampled): limit text '$lim'" ;; esac
    fi
    # stopped by resmon-run (the high mark, or its own check): the dump recorded the process that
    # held the memory, alive, before the first signal
    case $how in kernel) ;; *)
        markers "$T/mem-$tier.json" "process dump" | cut -f5 | grep -q '"cmd":"[^"]*alloc 128 30"' ||
            fail "$tier: memory ($how): the dump has not the process that held the memory: $(markers "$T/mem-$tier.json" "process dump")"
        markers "$T/mem-$tier.json" "memory limit" | cut -f5 | grep -q '"liveProcesses":\[.*alloc 128 30"' ||
            fail "$tier: memory ($how): the stop marker's live processes: $(markers "$T/mem-$tier.json" "memory limit")" ;;
    esac
    grep -q "stopped at its memory limit" "$T/mem.err" || fail "$tier: memory: summary headline: $(cat "$T/mem.err")"
    grep -q "the run ended: memory" "$T/mem.err" || fail "$tier: memory: no -v line with the reason"
    no_survivors "$HELPER alloc 128 30"
    echo "$tier: memory limit reached ($how): $lim"
    # without sampling nothing would stop a tree the kernel holds: its OOM killer acts at the limit
    if [ "$how" != sampled ]; then
        st=0
        # the victim run from a long path (a build tree deep in a CI workspace): the stop's text
        # keeps its whole command line
        _deep="$T/a-workspace-of-a-ci-job-deep-in-its-tree/build-directory-of-the-project/tests"
        mkdir -p "$_deep" && ln -sf "$HELPER" "$_deep/helper"
        $RESMON_RUN -v -i 0 --containment=$tier -o "$T/mem0-$tier.json" --memory-limit=32M -- \
            sh -c "'$_deep/helper' alloc 128 30; '$HELPER' sleep 30" >"$T/mem.out" 2>"$T/mem.err" || st=$?
        [ "$st" = 124 ] || fail "$tier: memory limit, -i 0: exit $st: $(cat "$T/mem.err")"
        stopped "$T/mem0-$tier.json" memory "32 MiB (33.6 MB)"
        lim=$(val "$(markers "$T/mem0-$tier.json" "memory limit" | cut -f5)" limit)
        # the stop names the OOM kill and its victim (its command line, or its name when it died
        # before it was read)
        case "$lim" in *"OOM killer killed in the tree at the limit of 32 MiB (33.6 MB): process "[0-9]*", $_deep/helper alloc 128 30") ;;
        *"OOM killer killed in the tree at the limit of 32 MiB (33.6 MB): process "[0-9]*", helper (command line not read)") ;;
        *) fail "$tier: memory (kernel, -i 0): limit text '$lim'" ;; esac
        grep -qF "$lim" "$T/mem.err" || fail "$tier: memory (kernel, -i 0): the summary has not the whole limit text: $(cat "$T/mem.err")"
        [ "$(count "$T/mem0-$tier.json" "OOM kill")" -ge 1 ] || fail "$tier: memory (kernel, -i 0): no OOM kill marker"
        no_survivors "$_deep/helper alloc 128 30"
        echo "$tier: memory limit, no sampling: the OOM killer's kill: $lim"
        # the command itself the victim: nothing alive at the stop, and no empty table says so
        $RESMON_RUN -i 0 --containment=$tier -o "$T/mem1-$tier.json" --memory-limit=32M -- "$HELPER" alloc 128 30 \
            >"$T/mem.out" 2>"$T/mem.err"
        _t=$(markers "$T/mem1-$tier.json" "memory limit" | cut -f5)
        [ -n "$_t" ] && ! has_key "$_t" liveProcesses || fail "$tier: memory, nothing alive: the stop marker: $_t"
        # and no kill step that reached nothing ("TERM to 0 processes")
        markers "$T/mem1-$tier.json" kill | grep -q '"targets":0[,}]' &&
            fail "$tier: memory, nothing alive: a kill step to no process: $(markers "$T/mem1-$tier.json" kill)"
        if frontend_available; then
            _f=$(frontend "$T/mem1-$tier.json") || fail "$tier: memory, nothing alive: the front-end does not load it"
            case "$_f" in *"rows="*"/ kill ("*) fail "$tier: memory, nothing alive: a kill row: $_f" ;; esac
        fi
    fi

    # cpu: two burners against 0.5 s of the tree's CPU, with samples far apart (-i 10): the timer
    # catches it, not a sample.
    start=$(now_ns)
    st=0
    $RESMON_RUN -v -i 10 --containment=$tier -o "$T/cpu-$tier.json" --cpu-limit=0.5 -- \
        sh -c "echo '{\"action\":\"test_start\",\"test\":\"burns\"}'; '$HELPER' burn 30 & '$HELPER' burn 30; wait" \
        >"$T/cpu.out" 2>"$T/cpu.err" || st=$?
    el=$(( ($(now_ns) - start) / 1000000 ))
    [ "$st" = 124 ] || fail "$tier: cpu limit: exit $st: $(cat "$T/cpu.err")"
    [ "$el" -lt 8000 ] || fail "$tier: cpu limit: the run went on for $el ms"
    stopped "$T/cpu-$tier.json" cpu "0.5 s"
    lim=$(val "$(markers "$T/cpu-$tier.json" "CPU limit" | cut -f5)" limit)
    case "$lim" in "the tree used "*" s of CPU time, the limit is 0.5 s") ;; *) fail "$tier: cpu: limit text '$lim'" ;; esac
    used=$(echo "$lim" | sed 's/the tree used \([0-9.]*\) s.*/\1/')
    ge "$used" 0.5 || fail "$tier: cpu: stopped at $used s, before the limit"
    ge 2 "$used" || fail "$tier: cpu: the limit seen late, at $used s"
    expect_test "$T/cpu-$tier.json" burns TIMEOUT purple
    # the burners run on through the stop's dump (its budget: 2 s) on both CPUs
    cpu=$(val "$(markers "$T/cpu-$tier.json" command | cut -f5)" cpuTime)
    ge 6000 "$cpu" || fail "$tier: cpu: the tree used $cpu ms against a 500 ms limit"
    no_survivors "$HELPER burn 30"
    echo "$tier: cpu limit reached after $el ms: $lim (the tree's total: $cpu ms)"

    # --preserve-status: the command's own status (the shell dies of the TERM)
    st=0
    $R -q --no-profile --preserve-status --cpu-limit=0.2 -- "$HELPER" burn 30 2>"$T/pres.err" || st=$?
    [ "$st" = 143 ] || fail "$tier: cpu limit with --preserve-status: exit $st, want 143"

    # tasks: a fork bomb (bounded at 200) against 16 tasks
    st=0
    $R -o "$T/tasks-$tier.json" --tasks-limit=16 -- sh -c \
        "echo '{\"action\":\"test_start\",\"test\":\"forks\"}'; exec '$HELPER' forkbomb 200" \
        >"$T/tasks.out" 2>"$T/tasks.err" || st=$?
    [ "$st" = 124 ] || fail "$tier: tasks limit: exit $st: $(cat "$T/tasks.err")"
    stopped "$T/tasks-$tier.json" tasks "16 tasks"
    lim=$(val "$(markers "$T/tasks-$tier.json" "tasks limit" | cut -f5)" limit)
    if grep -q "tasks 16: enforced by the kernel" "$T/tasks.err"; then
        [ "$lim" = "a fork was refused at the limit of 16 tasks" ] || fail "$tier: tasks (kernel): '$lim'"
        # the kernel held it: never more than 16 at a sample
        ge 16 "$(maxof "$T/tasks-$tier.json" Processes processes)" || fail "$tier: tasks (kernel): more than 16 processes"
    else
        case "$lim" in "the tree had "*" processes and threads, the limit is 16") ;; *) fail "$tier: tasks: '$lim'" ;; esac
        grep -q "RLIMIT_NPROC" "$T/tasks.err" || fail "$tier: tasks (sampled): -v does not say what it cannot do"
    fi
    expect_test "$T/tasks-$tier.json" forks INCOMPLETE orange
    no_survivors "$HELPER forkbomb 200"
    echo "$tier: tasks limit reached: $lim"

    # a command that gives up at once when a fork is refused (sh: Cannot fork): the kernel's
    # refusal is still the limit reached, though no sample saw the tree at it
    if grep -q "tasks 16: enforced by the kernel" "$T/tasks.err"; then
        st=0
        $R -o "$T/tasks2-$tier.json" --tasks-limit=4 -- sh -c \
            'for i in 1 2 3 4 5 6 7 8; do sleep 30 & done; wait' >/dev/null 2>"$T/tasks2.err" || st=$?
        [ "$st" = 124 ] || fail "$tier: a refused fork that ends the command: exit $st: $(cat "$T/tasks2.err")"
        grep -q "stopped at its tasks limit: a fork was refused at the limit of 4 tasks" "$T/tasks2.err" ||
            fail "$tier: a refused fork that ends the command: not said: $(cat "$T/tasks2.err")"
        stopped "$T/tasks2-$tier.json" tasks
    fi

    # a limit not reached changes nothing: the command's status, reason exit
    st=0
    $R -q -o "$T/none-$tier.json" --memory-limit=1G --cpu-limit=60 --tasks-limit=1000 -- sh -c 'exit 3' || st=$?
    [ "$st" = 3 ] || fail "$tier: limits not reached: exit $st"
    [ "$(val "$(markers "$T/none-$tier.json" command | cut -f5)" reason)" = exit ] || fail "$tier: limits not reached: reason"
    for n in timeout "memory limit" "CPU limit" "tasks limit"; do
        [ "$(count "$T/none-$tier.json" "$n")" = 0 ] || fail "$tier: limits not reached: a $n marker"
    done
done
exit 0

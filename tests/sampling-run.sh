#!/bin/sh
# Sampling end to end: the tree's CPU adds up to what the kernel accounted (both containment
# tiers, a fork storm too), memory and storage IO of the tree show, short processes get their
# process markers with the right exit, the machine markers match upstream's, -i 0 turns it off.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
FIX="$TOP_SRCDIR/tests/fixtures/moz"

tiers=subreaper
cgroup_available && tiers="$tiers cgroup"

# cpu_check TIER WHAT CMD...: run CMD under resmon-run (-i 0.05) inside rusage-wrap, which reports
# the CPU of every descendant resmon-run reaped (its RUSAGE_CHILDREN); the Tree CPU markers must
# add up to it within 1% + 5 ms. Prints the figures.
cpu_check() {
    _tier=$1 _what=$2
    shift 2
    _p="$T/cpu-$_tier.json"
    # (In a sanitizer build, LeakSanitizer's exit-time check runs in a child process of its own,
    # which would count among resmon-run's children: it is turned off for this one run.)
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        "$HELPER" rusage-wrap "$RESMON_RUN" --containment="$_tier" -i 0.05 -o "$_p" -- "$@" >/dev/null 2>"$T/cpu.err" ||
        fail "$_tier $_what: run failed: $(cat "$T/cpu.err")"
    "$CHECK" "$_p" || fail "$_tier $_what: invalid profile"
    _kern=$(sed -n 's/^children-cpu-ns //p' "$T/cpu.err")
    [ -n "$_kern" ] || skip "no /proc/PID/schedstat: cannot tell resmon-run's own CPU from its children's"
    _kern_ms=$(awk -v n="$_kern" 'BEGIN { printf "%.3f\n", n / 1e6 }')
    _tree=$(sum "$_p" "Tree CPU" cpuTime)
    echo "$_tier $_what: Tree CPU sum $_tree ms, kernel (RUSAGE_CHILDREN) $_kern_ms ms"
    near "$_tree" "$_kern_ms" 0.01 5 || fail "$_tier $_what: Tree CPU $_tree ms, the kernel accounted $_kern_ms ms"
}

for tier in $tiers; do
    cpu_check $tier "burn 0.4s" "$HELPER" burn 0.4
    ge "$(sum "$T/cpu-$tier.json" "Tree CPU" cpuTime)" 400 || fail "$tier: the burner's 400 ms are not all there"
    cpu_check $tier "1000 processes" sh -c 'for i in $(seq 1000); do /bin/true; done'
    [ "$(count "$T/cpu-$tier.json" command)" = 1 ] || fail "$tier: no command marker"
done

# Memory: 100 MiB touched and held for a second shows in Tree Memory.
P="$T/alloc.json"
"$RESMON_RUN" -i 0.05 -o "$P" -- "$HELPER" alloc 100 1 || fail "alloc run failed"
"$CHECK" "$P" || fail "alloc: invalid profile"
rss=$(maxof "$P" "Tree Memory" rss)
echo "alloc 100 MiB: peak Tree Memory rss $rss bytes"
ge "$rss" 104857600 || fail "alloc: peak tree RSS $rss < 100 MiB"

# Short processes get process markers with their exit: with the kernel's event filter (the
# default) and without it.
for filter in "" --no-event-filter; do
P="$T/procs$filter.json"
"$RESMON_RUN" -v -i 0.05 $filter -o "$P" -- sh -c "'$HELPER' exit 3; '$HELPER' killself TERM; exit 0" 2>"$T/procs.err" ||
    fail "short processes: run failed: $(cat "$T/procs.err")"
# Without the process connector (an unprivileged user) a process shorter than a sample may go
# unseen: -v says so, and then only what is seen is checked. Where the kernel's perf records
# tell the forks and exits instead, every process has its marker, but its exit only when it was
# read before its parent reaped it.
events=true exits=true
grep -q "process events: unavailable" "$T/procs.err" && events=false
grep -q "process events: the kernel's records of the tree's forks and exits" "$T/procs.err" && exits=false
grep -q "process events: " "$T/procs.err" || fail "-v does not say how the tree's processes are learned"
"$CHECK" "$P" || fail "short processes: invalid profile"
pm=$(markers "$P" process | cut -f5)
# proc_exit WANT_EXIT ARGS: exactly one process marker has this exit, and it names the helper: its
# command line, or its name (and that its command line was not read) when it was gone before its
# command line could be read — never its parent's command line. A process of which nothing is
# known has no marker: the "unnamed processes" warning counts it with its exit.
proc_exit() {
    _m=$(printf '%s\n' "$pm" | grep -F "\"exit\":\"$1\"")
    if [ -z "$_m" ]; then
        _w=$(markers "$P" "unnamed processes" | cut -f5)
        case "$_w" in *"$1: 1"*) echo "the process that ended with '$1' was gone before it could be named: $_w"; return 0 ;; esac
        if ! $events; then
            echo "skipped: without the process connector the process that ended with '$1' was not seen (shorter than a sample)"
            return 0
        fi
        if ! $exits; then
            # its marker without an exit: by its command line, or one of the two by its name
            _m=$(printf '%s\n' "$pm" | grep -F -e "\"cmd\":\"$HELPER $2\"" -e '"cmd":"helper (command line not read)"' |
                grep -v '"exit":')
            [ -n "$_m" ] || fail "no process marker of '$2' (its exit not read): $pm"
            echo "the process that ended with '$1' has its marker, its exit not read (reaped first)"
            return 0
        fi
        fail "no process marker with exit '$1', and no warning counts it: $pm / $_w"
    fi
    [ "$(printf '%s\n' "$_m" | grep -c .)" = 1 ] || fail "not one process marker with exit '$1': $pm"
    _c=$(val "$_m" cmd)
    [ "$_c" = "$HELPER $2" ] || [ "$_c" = "helper (command line not read)" ] || fail "the process that ended with '$1' is named '$_c'"
}
proc_exit "status 3" "exit 3"
proc_exit "signal TERM" "killself TERM"
# (a sanitizer's build adds its leak checker's process, forked by the helper and named as it)
[ "$(printf '%s\n' "$pm" | grep -c -F -e "\"cmd\":\"$HELPER " -e '"cmd":"helper (command line not read)"')" -ge 2 ] ||
    ! $events || fail "not one process marker for each of the two helpers: $pm"
es=$(printf '%s\n' "$pm" | grep -F '"cmd":"sh -c')
[ "$(val "$es" exit)" = "status 0" ] || fail "the shell: $es"
done

# Every process says what ran, a fork storm too: 300 /bin/true, 20 at a time, most reaped by
# their shell before resmon-run reads their command line. Where the kernel's records of execs can
# be had (-v says so), each is named by its command line or by its program's name (and that the
# command line was not read), none is counted unnamed, and each has its marker, starting and
# ending within the command's: with the process connector, and without it (an unprivileged user)
# from the same perf events' records of the tree's forks and exits. Read as the front-end shows
# them: each process marker's table label and times.
storm='i=0; while [ $i -lt 15 ]; do j=0; while [ $j -lt 20 ]; do /bin/true & j=$((j+1)); done; wait; i=$((i+1)); done'
for tier in $tiers; do
    P="$T/storm-$tier.json"
    "$RESMON_RUN" -v -q -i 0.05 --containment=$tier -o "$P" -- sh -c "$storm" 2>"$T/storm.err" ||
        fail "$tier storm: run failed: $(cat "$T/storm.err")"
    grep -q "process names: " "$T/storm.err" || fail "-v does not say how processes are named"
    if ! grep -q "process names: the kernel's record" "$T/storm.err"; then
        echo "$tier storm: skipped: $(grep "process names: " "$T/storm.err")"
        continue
    fi
    frontend_available || { echo "$tier storm: skipped: the front-end's loader is not here"; continue; }
    FFPROF_SAMPLES=1000 node "$FFPROF" "$P" >"$T/storm-ff.json"
    node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
        if (!r.ok) throw new Error("the front-end does not load it: " + r.error);
        const procs = r.samples["Process:process"] || [], cmd = (r.samples["Command:command"] || [])[0];
        if (!cmd) throw new Error("no command marker");
        const out = procs.filter((m) => !(m.start >= cmd.start && m.start <= m.end && m.end <= cmd.end));
        if (out.length) throw new Error("process markers outside the command [" + cmd.start + ", " + cmd.end + "]: " +
            JSON.stringify(out.slice(0, 3).map((m) => [m.tableLabel, m.start, m.end])));
        const labels = procs.map((m) => m.tableLabel);
        const n = (w) => labels.filter((l) => l === w).length;
        const shell = labels.filter((l) => l.startsWith("sh -c ")).length;
        const byName = n("true (command line not read)"), read = n("/bin/true");
        const other = labels.length - shell - byName - read;
        console.log("storm: " + labels.length + " process markers: " + read + " by command line, " + byName +
            " by name; unnamed: " + (r.markerNames["unnamed processes"] || 0));
        if (r.markerNames["unnamed processes"]) throw new Error("processes counted unnamed");
        if (other || shell !== 1) throw new Error("labels: " + JSON.stringify(labels.filter((l) => l !== "/bin/true")));
        if (read + byName !== 300) throw new Error(read + byName + " markers of 300 processes");
    ' "$T/storm-ff.json" ||
        fail "$tier storm: not every process says what ran"
done
# Where perf events are refused (a container's seccomp profile), names are what /proc still
# holds: -v says so once, the run is otherwise the same, and what nothing names is counted.
"$HELPERS/noperf" "$RESMON_RUN" -v -q -i 0.05 -o "$T/storm-noperf.json" -- sh -c "$storm" 2>"$T/storm.err" ||
    fail "storm without perf events: run failed: $(cat "$T/storm.err")"
[ "$(grep -c "process names: the kernel's records unavailable (Operation not permitted)" "$T/storm.err")" = 1 ] ||
    fail "storm without perf events: -v does not say names are read from /proc only: $(cat "$T/storm.err")"
[ "$(grep -v "^resmon-run: " "$T/storm.err" | grep -c .)" = 0 ] || fail "storm without perf events: $(cat "$T/storm.err")"
if ! grep -q "process events: unavailable" "$T/storm.err"; then
    named=$(markers "$T/storm-noperf.json" process | grep -c '"cmd":"\(/bin/true\|true (command line not read)\)"')
    unnamed=$(markers "$T/storm-noperf.json" "unnamed processes" | sed -n 's/.*status 0: \([0-9]*\).*/\1/p')
    echo "storm without perf events: $named named, ${unnamed:-0} unnamed"
    [ $((named + ${unnamed:-0})) = 300 ] || fail "storm without perf events: $named named, ${unnamed:-0} unnamed of 300"
fi

# Machine markers: one set per sample, with upstream's fields (the fixture is upstream's stream).
keys() { sed 's/{"type":"[A-Za-z]*",//; s/}$//' | tr ',' '\n' | sed -n 's/^"\([^"]*\)":.*/\1/p' | sort | tr '\n' ' '; }
P="$T/alloc.json"
n=$(count "$P" "Tree CPU")
[ "$n" -ge 5 ] || fail "only $n samples in a second at -i 0.05"
for name in "CPU Use" Memory IO NetIO "Sampling Interval"; do
    [ "$(count "$P" "$name")" = "$n" ] || fail "$(count "$P" "$name") '$name' markers for $n samples"
    ours=$(markers "$P" "$name" | head -n 1 | cut -f5 | keys)
    theirs=$(grep -F "\"type\":\"marker\",\"name\":\"$name\"" "$FIX/stream-complete.jsonl" | head -n 1 |
        sed 's/.*"data":\({[^}]*}\).*/\1/' | keys)
    for k in $theirs; do
        case " $ours " in *" $k "*) ;; *) fail "'$name' lacks upstream's field $k: ours [$ours], upstream [$theirs]" ;; esac
    done
    # Our extensions: how many timer ticks a late sample missed; the machine's busy share as a
    # number (what the CPU Use counter draws); the disks' time on requests (Perfherder's I/O times).
    allowed=" $theirs "
    [ "$name" = "Sampling Interval" ] && allowed="$allowed missed "
    [ "$name" = IO ] && allowed="$allowed read_time write_time "
    [ "$name" = "CPU Use" ] && allowed="$allowed busy "
    for k in $ours; do
        case "$allowed" in *" $k "*) ;; *) fail "'$name' has a field upstream does not have: $k" ;; esac
    done
    type_ours=$(val "$(markers "$P" "$name" | head -n 1 | cut -f5)" type)
    type_theirs=$(grep -F "\"type\":\"marker\",\"name\":\"$name\"" "$FIX/stream-complete.jsonl" | head -n 1 | sed 's/.*"data":{"type":"\([^"]*\)".*/\1/')
    [ "$type_ours" = "$type_theirs" ] || fail "'$name' type: ours $type_ours, upstream $type_theirs"
    [ "$(markers "$P" "$name" | cut -f4 | sort -u)" = 0 ] || fail "'$name' not in category 0"
done
# Intervals for the measurements, instants for Sampling Interval.
markers "$P" "CPU Use" | cut -f3 | grep -qx null && fail "a CPU Use marker is an instant"
[ "$(markers "$P" "Sampling Interval" | cut -f3 | sort -u)" = null ] || fail "Sampling Interval is not an instant"

# -i 0: no sampling, the command marker stays.
P="$T/nosample.json"
"$RESMON_RUN" -i 0 -o "$P" -- "$HELPER" burn 0.1 || fail "-i 0 run failed"
"$CHECK" "$P" || fail "-i 0: invalid profile"
for name in "CPU Use" Memory IO NetIO "Sampling Interval" "Tree CPU" "Tree Memory" "Tree IO" Processes; do
    [ "$(count "$P" "$name")" = 0 ] || fail "-i 0: $(count "$P" "$name") '$name' markers"
done
[ "$(count "$P" command)" = 1 ] || fail "-i 0: no command marker"
[ "$(val "$(markers "$P" command | cut -f5)" exit)" = "status 0" ] || fail "-i 0: command marker $(markers "$P" command)"
exit 0

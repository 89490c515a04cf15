#!/bin/sh
# Sampled CPU stacks (--cpu-profile): every process of the tree sampled by the kernel, its stacks
# in the profile as the front-end's own sample tables, lined up with the tests. The workload
# (tests/cpuburn.c, built with frame pointers) burns CPU in a function of its own during each of
# three GoogleTest tests, the second in a forked child.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
BURN="$HELPERS/cpuburn"

# ---- the kernel says no (a container's seccomp profile): one line, a note in the meta, the run
# unchanged --------------------------------------------------------------------------------------
"$HELPERS/noperf" "$RESMON_RUN" -v --cpu-profile -o "$T/no.json" -- "$BURN" 20 >"$T/no.out" 2>"$T/no.err"
st=$?
[ $st -eq 0 ] || fail "refused sampling failed the run: status $st: $(cat "$T/no.err")"
grep -q '^\[  PASSED  \] 3 tests' "$T/no.out" || fail "the command's output: $(cat "$T/no.out")"
[ "$(grep -c 'cpu profile' "$T/no.err")" -eq 1 ] && grep -q 'cpu profile: unavailable: .*perf_event_open.*Operation not permitted (perf_event_paranoid is -\{0,1\}[0-9])$' "$T/no.err" ||
    fail "not one -v line saying why: $(cat "$T/no.err")"
case "$(meta "$T/no.json" cpuProfile)" in
*'"error":"'*perf_event_open*) ;;
*) fail "the meta does not say why: $(meta "$T/no.json" cpuProfile)" ;;
esac
[ -z "$("$CHECK" --samples "$T/no.json")" ] || fail "samples without sampling"
profile_ok "$T/no.json" || fail "the profile without samples is not valid"
# and without -v, nothing is said
"$HELPERS/noperf" "$RESMON_RUN" -q --cpu-profile -o "$T/no2.json" -- "$BURN" 1 >/dev/null 2>"$T/no2.err" ||
    fail "refused sampling failed a quiet run"
[ ! -s "$T/no2.err" ] || fail "a quiet run said: $(cat "$T/no2.err")"

# ---- sampling -----------------------------------------------------------------------------------
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 4)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 2 ]; then
    echo "SKIP: sampling: perf_event_paranoid is $paranoid, an unprivileged user may not sample (the fallback above is what they get)"
    exit 77
fi
"$RESMON_RUN" -v --cpu-profile=999 -o "$T/p.json" -- "$BURN" 300 >"$T/out" 2>"$T/err"
st=$?
[ $st -eq 0 ] || fail "status $st: $(cat "$T/err")"
! grep -q 'cpu profile' "$T/err" || fail "sampling said: $(cat "$T/err")"
# the summary names the hottest functions, the three burners about a third each
grep -Eq '^  hottest      [2-4][0-9]% burn_[a-z]+, [2-4][0-9]% burn_[a-z]+, [2-4][0-9]% burn_[a-z]+ \(of [0-9]+ CPU samples\)$' "$T/err" ||
    fail "no hottest functions in the summary: $(cat "$T/err")"
profile_ok "$T/p.json" || fail "the sampled profile is not valid"
case "$(meta "$T/p.json" cpuProfile)" in
'{"hz":999,"samples":'[1-9]*'"dropped":0,'*) ;;
*) fail "the meta: $(meta "$T/p.json" cpuProfile)" ;;
esac
# in_ranges FILE: in each test's range at least 70% of the samples are in that test's function,
# all of them of one process
in_ranges() {
    "$CHECK" --sample-times "$1" >"$T/samples"
    markers "$1" test >"$T/tests"
    for t in alpha beta gamma; do
        range=$(awk -F'\t' -v n="\"name\":\"cpu.$t\"" 'index($5, n) { print $2, $3 }' "$T/tests")
        [ -n "$range" ] || fail "$1: no marker of cpu.$t: $(cat "$T/tests")"
        set -- $range
        awk -F'\t' -v a="$1" -v b="$2" -v f="burn_$t" '
            $3 >= a && $3 <= b { n++; if ((" < " $2 " < ") ~ (" < " f " < ")) { k++; pids[$1] = 1 } }
            END {
                for (p in pids) np++
                printf "cpu.%s: %d of %d samples in %s (%d pid)\n", substr(f, 6), k, n, f, np
                exit !(n >= 20 && k >= 0.7 * n && np == 1)
            }' "$T/samples" || fail "cpu.$t's range is not in burn_$t"
    done
}
# how the tree is followed (cpuprof.h, FOLLOWING): the run's cgroup where it has one the kernel
# samples (the cgroup tier, perf_event on its hierarchy: not bound to a v1 one in /proc/cgroups,
# and system-wide events: root or perf_event_paranoid <= 0), else inherited events
follow_expected() {
    if [ "$(val "$(meta "$1" cpuProfile)" follow)" = "" ]; then
        echo none
    elif [ "$(meta "$1" containment)" != cgroup ]; then
        echo inherit
    elif awk '$1 == "perf_event" && $2 != 0 { v1 = 1 } END { exit !v1 }' /proc/cgroups 2>/dev/null; then
        echo inherit
    elif [ "$(id -u)" = 0 ] || [ "$paranoid" -le 0 ]; then
        echo cgroup
    else
        echo inherit
    fi
}
follow=$(val "$(meta "$T/p.json" cpuProfile)" follow)
[ "$follow" = "$(follow_expected "$T/p.json")" ] ||
    fail "followed by $follow, not $(follow_expected "$T/p.json") (containment $(meta "$T/p.json" containment), uid $(id -u), paranoid $paranoid)"
echo "followed by: $follow"
in_ranges "$T/p.json"
alpha_pid=$(awk -F'\t' '$2 ~ /^burn_alpha/ { print $1; exit }' "$T/samples")
beta_pid=$(awk -F'\t' '$2 ~ /^burn_beta/ { print $1; exit }' "$T/samples")
[ "$alpha_pid" != "$beta_pid" ] || fail "the forked child's samples are under its parent's pid"
# the stacks go up to main, from a named library
grep -q "	burn_gamma < main < " "$T/samples" || fail "no stack burn_gamma < main: $(sort "$T/samples" | uniq -c | sort -rn | head)"
# a thread per sampled thread, the child's named as its parent (it was gone before its name was
# read), its stacks Running as the front-end takes a stack's category (from its frame)
"$CHECK" --threads "$T/p.json" >"$T/threads"
for p in "$alpha_pid" "$beta_pid"; do
    [ "$(awk -F'\t' -v p="$p" '$1 == p && $2 == p && $3 == "cpuburn" && $6 == "Running"' "$T/threads" | wc -l)" -eq 1 ] ||
        fail "not one thread named cpuburn, Running, for process $p: $(cat "$T/threads")"
done
# the front-end sees them: a process track each, its samples counted
if frontend_available; then
    node "$FFPROF" "$T/p.json" >"$T/ff.json"
    node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
        const pids = process.argv.slice(2);
        const th = r.threads.filter((t) => pids.includes(t.pid) && t.processType === "command");
        if (!r.ok || th.length !== 2 || th.some((t) => t.samples < 20)) throw new Error(JSON.stringify(r.threads));
        const g = r.tracks.global.filter((t) => t.type === "process" && pids.includes(t.pid));
        if (g.length !== 2 || g.some((t) => t.hidden)) throw new Error("tracks: " + JSON.stringify(r.tracks.global));
        console.log("front-end: " + th.map((t) => t.pid + ": " + t.samples + " samples").join(", "));
    ' "$T/ff.json" "$alpha_pid" "$beta_pid" || fail "the front-end does not show the sampled threads"
fi

# ---- a process started late, two levels down: sampled, under its own pid and tid ---------------
# The command's shell runs a first burner, then a shell that execs into the second: a grandchild
# started well after sampling began, which forks a child of its own (burn_beta). Its pid is
# written by the shell it replaces.
"$RESMON_RUN" -q --cpu-profile=999 -o "$T/late.json" -- sh -c '"$1" 100 && sh -c "echo \$\$ >\"$2/late.pid\"; exec \"$1\" 200" & wait' \
    sh "$BURN" "$T" >"$T/late.out" 2>&1 || fail "the late run: $(cat "$T/late.out")"
profile_ok "$T/late.json" || fail "the profile of the late run is not valid"
late=$(cat "$T/late.pid")
"$CHECK" --samples "$T/late.json" >"$T/late.samples"
"$CHECK" --threads "$T/late.json" >"$T/late.threads"
[ "$(awk -F'\t' -v p="$late" '$1 == p && $2 == p && $3 == "cpuburn"' "$T/late.threads" | wc -l)" -eq 1 ] ||
    fail "no thread of the late grandchild $late: $(cat "$T/late.threads")"
awk -F'\t' -v p="$late" '$1 == p && $2 ~ /^burn_(alpha|gamma) < main/ { k++ } $1 != p && $2 ~ /^burn_beta < main/ { b++ }
    END { printf "late grandchild %d: %d samples in its own burners, %d in its child'"'"'s\n", p, k, b; exit !(k >= 50 && b >= 50) }' \
    "$T/late.samples" || fail "the late grandchild is not sampled: $(cut -f1,2 "$T/late.samples" | sort | uniq -c | sort -rn | head)"
[ "$(val "$(meta "$T/late.json" cpuProfile)" follow)" = "$follow" ] || fail "the late run is followed otherwise"

# ---- short processes: the cgroup's events sample them (inherited ones count each process's own
# CPU time from zero, and a process that ends within a period is never sampled) -----------------
if [ "$follow" = cgroup ]; then
    "$RESMON_RUN" -q --cpu-profile=99 -o "$T/short.json" -- \
        sh -c 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i + 1)); done' >/dev/null 2>&1 || fail "the short processes"
    profile_ok "$T/short.json" || fail "the profile of the short processes is not valid"
    "$CHECK" --threads "$T/short.json" | awk -F'\t' '$3 == "true" { n++ } END {
        printf "short processes: %d of 300 sampled\n", n; exit !(n >= 20) }' ||
        fail "the short processes are not sampled: $("$CHECK" --threads "$T/short.json" | cut -f3 | sort | uniq -c)"
fi

# ---- bounded: past its caps (lowered in a test build) samples are dropped and processes not
# followed, and the run says so --------------------------------------------------------------------
if "$RESMON_RUN" --version | grep -q "test hooks"; then
    RESMON_TEST_CPUPROF_CAPS=8,200,4 "$RESMON_RUN" -v --cpu-profile=999 -o "$T/caps.json" -- \
        sh -c '"$0" 300; i=0; while [ $i -lt 40 ]; do /bin/true; i=$((i + 1)); done' "$BURN" >/dev/null 2>"$T/caps.err" ||
        fail "the capped run: $(cat "$T/caps.err")"
    profile_ok "$T/caps.json" || fail "the capped run's profile is not valid"
    m=$(meta "$T/caps.json" cpuProfile)
    [ "$(val "$m" samples)" = 200 ] && [ "$(val "$m" dropped)" -gt 0 ] && [ "$(val "$m" untracked)" -ge 30 ] ||
        fail "the caps: $m"
    grep -q "^resmon-run: cpu profile: 200 samples; [1-9][0-9]* dropped past its caps, [1-9][0-9]* processes not followed\$" "$T/caps.err" ||
        fail "the capped run did not say so: $(cat "$T/caps.err")"
    [ "$("$CHECK" --threads "$T/caps.json" | cut -f1 | sort -u | wc -l)" -le 8 ] ||
        fail "more processes followed than the cap: $("$CHECK" --threads "$T/caps.json")"
else
    echo "SKIP: the caps: resmon-run built without --enable-test-hooks"
fi

# ---- the other way where the default is the cgroup's: inherited events ----------------------------
if [ "$follow" = cgroup ]; then
    "$RESMON_RUN" -q --containment=subreaper --cpu-profile=999 -o "$T/inherit.json" -- "$BURN" 300 >/dev/null 2>&1 ||
        fail "the run in the subreaper tier"
    profile_ok "$T/inherit.json" || fail "the profile of the subreaper tier is not valid"
    [ "$(val "$(meta "$T/inherit.json" cpuProfile)" follow)" = inherit ] ||
        fail "the subreaper tier: $(meta "$T/inherit.json" cpuProfile)"
    in_ranges "$T/inherit.json"
fi

# ---- without frame pointers: the stacks are unwound with the CFI, up to main ---------------------
# (a position-independent build, and one placed where its headers say: ET_EXEC)
for b in nofp nopie; do
    "$RESMON_RUN" -q --cpu-profile=999 -o "$T/$b.json" -- "$BURN-$b" 300 >"$T/$b.out" 2>&1 ||
        fail "the build without frame pointers ($b): $(cat "$T/$b.out")"
    profile_ok "$T/$b.json" || fail "the profile of the build without frame pointers ($b) is not valid"
    in_ranges "$T/$b.json"
    for t in alpha beta gamma; do
        awk -F'\t' -v f="burn_$t < main < " 'index($2, f) == 1 { k++ } $2 ~ ("^burn_" t) { n++ }
            END { printf "no frame pointers (%s): %d of %d samples in burn_%s unwound up to main\n", b, k, n, t; exit !(n && k >= 0.9 * n) }' \
            t="$t" b="$b" "$T/samples" || fail "burn_$t ($b) is not unwound up to main: $(sort "$T/samples" | cut -f1,2 | uniq -c | sort -rn | head -5)"
    done
done

# ---- kernel frames where the kernel allows them (root, perf_event_paranoid <= 1) -----------------
"$RESMON_RUN" -q --cpu-profile=999 -o "$T/kern.json" -- dd if=/dev/zero of=/dev/null bs=1M count=4000 >/dev/null 2>&1 ||
    fail "the run of dd"
profile_ok "$T/kern.json" || fail "the profile with kernel frames is not valid"
"$CHECK" --samples "$T/kern.json" >"$T/kern.samples"
if [ "$(id -u)" = 0 ] || [ "$paranoid" -le 1 ]; then
    # dd reads zeros: most samples in the kernel, named from its symbols (the read system call's
    # own functions, not addresses), above dd's own read
    awk -F'\t' '{ n++ } $2 ~ /^[^ 0][^ ]* \[kernel\] < .*(vfs_read|ksys_read) \[kernel\] < .* < (__)?read < / { k++ }
        END { printf "kernel: %d of %d samples in the kernel under read\n", k, n; exit !(n >= 20 && k >= 0.5 * n) }' \
        "$T/kern.samples" || fail "no kernel frames: $(cut -f2 "$T/kern.samples" | sort | uniq -c | sort -rn | head -5)"
else
    ! grep -q '\[kernel\]' "$T/kern.samples" || fail "kernel frames where the kernel does not allow them"
    echo "SKIP: kernel frames: perf_event_paranoid is $paranoid for this user (user space only)"
fi

# ---- JIT code: node's perf map names its JavaScript functions -----------------------------------
if command -v node >/dev/null 2>&1; then
    # node writes its V8 log (isolate-*-v8.log) where it runs: in the test's own directory
    (cd "$T" && "$RESMON_RUN" -q --cpu-profile=999 -o "$T/js.json" -- node --perf-basic-prof -e '
        function hotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + i) | 0; return s; }
        let t = 0;
        const until = process.cpuUsage().user + 600000;
        while (process.cpuUsage().user < until) t += hotLoop(1e6);
        console.log(t === 0.5 ? "" : "done");' >"$T/js.out" 2>&1) || fail "node: $(cat "$T/js.out")"
    profile_ok "$T/js.json" || fail "the node profile is not valid"
    "$CHECK" --samples "$T/js.json" >"$T/js.samples"
    for p in $(cut -f1 "$T/js.samples" | sort -u); do
        rm -f "/tmp/perf-$p.map"
    done
    awk -F'\t' '{ n++ } $2 ~ /^JS:[*~^]?hotLoop / { k++ }
        END { printf "node: %d of %d samples in JS:hotLoop\n", k, n; exit !(k >= 0.5 * n) }' "$T/js.samples" ||
        fail "the JavaScript function is not named: $(sort "$T/js.samples" | uniq -c | sort -rn | head -5)"
else
    echo "SKIP: no node: the JIT case"
fi

# ---- JIT code: the JVM's perf map, written as it exits, names its compiled methods --------------
if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
    # hotLoop runs for 600 ms of the thread's own CPU time; the JVM runs in the test's own
    # directory, where it may leave files (hs_err, its source launcher's)
    cat >"$T/Hot.java" <<'JAVA'
public class Hot {
    static int hotLoop(int n) { int s = 0; for (int i = 0; i < n; i++) s = s * 31 + i; return s; }
    public static void main(String[] args) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long until = mx.getCurrentThreadCpuTime() + 600_000_000L;
        int t = 0;
        while (mx.getCurrentThreadCpuTime() < until) t += hotLoop(1_000_000);
        System.out.println(t == 42 ? "" : "done");
    }
}
JAVA
    (cd "$T" && "$RESMON_RUN" -q --cpu-profile=999 -o "$T/java.json" -- \
        java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit Hot.java >"$T/java.out" 2>&1) ||
        fail "java: $(cat "$T/java.out")"
    profile_ok "$T/java.json" || fail "the JVM's profile is not valid"
    "$CHECK" --samples "$T/java.json" >"$T/java.samples"
    for p in $(cut -f1 "$T/java.samples" | sort -u); do
        rm -f "/tmp/perf-$p.map"
    done
    awk -F'\t' '{ n++ } $2 ~ /^int Hot\.hotLoop\(int\)( |$)/ { k++ }
        END { printf "java: %d of %d samples in Hot.hotLoop\n", k, n; exit !(k >= 150) }' "$T/java.samples" ||
        fail "the Java method is not named: $(cut -f2 "$T/java.samples" | sed "s/ < .*//" | sort | uniq -c | sort -rn | head -5)"
else
    echo "SKIP: no JDK (java, javac): the JVM's perf map"
fi

# ---- a timeout: the stop's dump and the samples side by side, the samples up to the stop ---------
"$RESMON_RUN" -q -t 0.6 --cpu-profile=999 -o "$T/to.json" -- "$BURN" 10000 >/dev/null 2>&1
st=$?
[ $st -eq 124 ] || fail "timeout: status $st"
profile_ok "$T/to.json" || fail "the profile of a timeout with samples is not valid"
# the dump's stacks of the sampled main thread: a thread of that process next to the sampled one
# (profile_ok: every thread with samples has a track in the front-end)
"$CHECK" --threads "$T/to.json" | awk -F'\t' '$1 == $2 && $3 == "cpuburn (at the stop)" { k++ } $1 == $2 && $3 == "cpuburn" { n++ }
    END { exit !(k == 1 && n == 1) }' || fail "the dump and the samples of the main thread: $("$CHECK" --threads "$T/to.json")"
"$CHECK" --sample-times "$T/to.json" | awk -F'\t' '$2 ~ /^burn_alpha < main/ { n++ } END { exit !(n >= 20) }' ||
    fail "no samples before the timeout: $("$CHECK" --sample-times "$T/to.json" | cut -f1,2 | sort | uniq -c | sort -rn | head -5)"

# ---- killed outright: --recover keeps the samples taken so far ---------------------------------
# The workload stays (paused) after its tests; once a sampling tick has come after the last test
# ended (the samples are drained at each tick), resmon-run is killed with SIGKILL.
"$RESMON_RUN" -q --cpu-profile=999 -i 0.1 -o "$T/k.json" -- "$BURN" 300 pause >"$T/k.out" 2>"$T/k.err" &
sup=$!
stream_shows "$T/k.out" "PASSED"
deadline=$(( $(date +%s) + 30 ))
until "$CHECK" --dump "$T/k.json" | awk -F'\t' '
        $1 == "test" && index($5, "\"name\":\"cpu.gamma\"") { e = $3 }
        $1 == "Tree CPU" && e != "" && $3 > e { f = 1 }
        END { exit !f }'; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "no sampling tick after the last test"
    sleep 0.1
done
kill -9 $sup
wait $sup
grep -q '"type":"cpusamples"' "$T/k.json" || fail "the killed run's stream holds no samples"
"$RESMON_RUN" --recover "$T/k.json" -o "$T/recovered.json" || fail "--recover failed"
profile_ok "$T/recovered.json" || fail "the recovered profile is not valid"
in_ranges "$T/recovered.json"
case "$(meta "$T/recovered.json" cpuProfile)" in
'{"hz":999,"samples":'[1-9]*) ;;
*) fail "the recovered meta: $(meta "$T/recovered.json" cpuProfile)" ;;
esac

check_every_profile
exit 0

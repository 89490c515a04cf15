#!/bin/sh
# Python functions in sampled CPU stacks (--cpu-profile): CPython 3.12 and later, run with -X perf,
# writes /tmp/perf-PID.map naming a trampoline per Python function it runs, and the profile names
# the samples in them "py::FUNCTION:FILE". The workload burns CPU in a Python function of its own
# during each of three GoogleTest tests.
#
# The interpreter: python3.13 or python3.12 on PATH, or a python3 of 3.12 or later; else, as root,
# a root directory holding one (RESMON_TEST_PYTHON_CHROOT, e.g. a Debian 13 made by debootstrap),
# run in it with chroot(8): its perf map is in the chroot's /tmp, its code in the chroot's files.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 4)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 2 ]; then
    skip "perf_event_paranoid is $paranoid, an unprivileged user may not sample"
fi
# at_least_312 CMD...: CMD is a Python of 3.12 or later
at_least_312() { "$@" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; }
root=
python=
for p in python3.13 python3.12 python3; do
    if command -v "$p" >/dev/null 2>&1 && at_least_312 "$p"; then
        python=$(command -v "$p")
        break
    fi
done
if [ -z "$python" ] && [ -n "${RESMON_TEST_PYTHON_CHROOT:-}" ]; then
    [ "$(id -u)" = 0 ] || skip "RESMON_TEST_PYTHON_CHROOT is given, but chroot needs root"
    root=$(cd "$RESMON_TEST_PYTHON_CHROOT" && pwd -P) || fail "RESMON_TEST_PYTHON_CHROOT: no directory $RESMON_TEST_PYTHON_CHROOT"
    at_least_312 chroot "$root" python3 || fail "RESMON_TEST_PYTHON_CHROOT: no python3 of 3.12 or later in $root"
    python="chroot $root python3"
fi
[ -n "$python" ] || skip "no Python 3.12 or later (python3.13, python3.12, a python3 on PATH, or RESMON_TEST_PYTHON_CHROOT=DIR, a root directory with one, as root)"
echo "python: $python ($($python -c 'import sys; print(sys.version.split()[0])'))"

# Each test burns 300 ms of the process's CPU time in its own function's loop, called from the
# script's top level: the samples' stacks go on past the function's trampoline (memory no file
# maps, no call-frame information: forensics.c steps over its few instructions) to the caller's,
# py::<module>, even in an interpreter built without frame pointers (Debian's).
# The script is read from stdin (a chroot need not see $T; its file name is then <stdin>).
cat >"$T/burn.py" <<'PY'
import time
def burn_alpha():
    s, until = 0, time.process_time() + 0.3
    while time.process_time() < until:
        for i in range(1000):
            s = (s * 31 + i) & 0xffff
    return s
def burn_beta():
    s, until = 0, time.process_time() + 0.3
    while time.process_time() < until:
        for i in range(1000):
            s = (s * 37 + i) & 0xffff
    return s
def burn_gamma():
    s, until = 0, time.process_time() + 0.3
    while time.process_time() < until:
        for i in range(1000):
            s = (s * 41 + i) & 0xffff
    return s
print("[==========] Running 3 tests from 1 test suite.", flush=True)
for name, f in (("alpha", burn_alpha), ("beta", burn_beta), ("gamma", burn_gamma)):
    print("[ RUN      ] cpu." + name, flush=True)
    f()
    print("[       OK ] cpu." + name + " (0 ms)", flush=True)
print("[==========] 3 tests from 1 test suite ran.\n[  PASSED  ] 3 tests.", flush=True)
PY
# shellcheck disable=SC2086 # $python is a command and its arguments
"$RESMON_RUN" -q --cpu-profile=999 -o "$T/py.json" -- $python -X perf - <"$T/burn.py" >"$T/out" 2>"$T/err"
st=$?
[ $st -eq 0 ] || fail "status $st: $(cat "$T/err")"
grep -q '^\[  PASSED  \] 3 tests' "$T/out" || fail "the command's output: $(cat "$T/out")"
profile_ok "$T/py.json" || fail "the profile is not valid"
"$CHECK" --sample-times "$T/py.json" >"$T/samples"
# the perf maps the interpreter left (in its root's /tmp)
for p in $(cut -f1 "$T/samples" | sort -u); do
    rm -f "$root/tmp/perf-$p.map"
done
markers "$T/py.json" test >"$T/tests"
# in each test's range at least 70% of the samples are under that test's Python function, and
# of those, 70% show its caller further out
for t in alpha beta gamma; do
    range=$(awk -F'\t' -v n="\"name\":\"cpu.$t\"" 'index($5, n) { print $2, $3 }' "$T/tests")
    [ -n "$range" ] || fail "no marker of cpu.$t: $(cat "$T/tests")"
    set -- $range
    awk -F'\t' -v a="$1" -v b="$2" -v f="py::burn_$t:" '
        $3 >= a && $3 <= b {
            n++
            at = index(" < " $2, " < " f)
            if (at) { k++; if (index(substr(" < " $2, at), " < py::<module>:")) c++ }
        }
        END {
            printf "cpu.%s: %d of %d samples under %s, %d of them under py::<module> too\n",
                substr(f, 10, length(f) - 10), k, n, f, c
            exit !(n >= 20 && k >= 0.7 * n && c >= 0.7 * k)
        }' "$T/samples" || fail "cpu.$t's range is not under py::burn_$t < py::<module>: $(cut -f2 "$T/samples" | sort | uniq -c | sort -rn | head -5)"
done
# the samples of the whole run with a Python function in their stack
awk -F'\t' '{ n++ } $2 ~ /(^| < )py::/ { k++ } END { printf "%d of %d samples under a Python function\n", k, n }' "$T/samples"
# the front-end sees the samples of the interpreter's thread
if frontend_available; then
    node "$FFPROF" "$T/py.json" >"$T/ff.json"
    node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
        const th = r.threads.filter((t) => t.processType === "command" && t.samples > 0);
        if (!r.ok || !th.some((t) => t.samples >= 300)) throw new Error(JSON.stringify(r.threads));
        console.log("front-end: " + th.map((t) => t.name + " " + t.pid + ": " + t.samples + " samples").join(", "));
    ' "$T/ff.json" || fail "the front-end does not show the sampled interpreter"
fi

check_every_profile
exit 0

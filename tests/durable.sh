#!/bin/sh
# The profile is flushed to disk (fsync of the file and of its directory) when the run lasted
# longer than --fsync-interval, always with --fsync-interval=0, and not for a shorter run, which
# never had its stream flushed either: resmon-run's fsync calls, counted with strace.
. "$TOP_SRCDIR/tests/lib.sh"
command -v strace >/dev/null || skip "strace is not installed"
strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here"

# fsyncs COUNTFILE ARGS...: resmon-run ARGS under strace; prints how many fsync calls it made
fsyncs() {
    _log=$1; shift
    # (LeakSanitizer cannot work under a tracer: the leaks are checked by the other tests)
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
        strace -f -qq -e trace=fsync,fdatasync -o "$_log" "$RESMON_RUN" "$@" >/dev/null 2>"$T/err" ||
        fail "resmon-run $*: status $?: $(cat "$T/err")"
    grep -cE 'f(data)?sync\(' "$_log"
}

# a run shorter than the interval (a minute: under strace and a sanitizer, even `true` may take
# longer than the default second): nothing flushed
n=$(fsyncs "$T/short.st" -q --fsync-interval=60 -o "$T/short.json" -- true)
[ "$n" = 0 ] || fail "a run shorter than the interval made $n fsync calls: $(cat "$T/short.st")"
profile_ok "$T/short.json" || fail "the short run's profile"

# the same with --fsync-interval=0 (no flushes while running, one at the end): the file and
# its directory
n=$(fsyncs "$T/zero.st" -q --fsync-interval=0 -o "$T/zero.json" -- true)
[ "$n" -ge 2 ] || fail "--fsync-interval=0 made $n fsync calls: $(cat "$T/zero.st")"
profile_ok "$T/zero.json" || fail "the --fsync-interval=0 run's profile"

# a run longer than the interval: the stream while it runs, then the profile and its directory
n=$(fsyncs "$T/long.st" -q --fsync-interval=0.05s -i 0.02 -o "$T/long.json" -- "$HELPER" sleep 0.3)
[ "$n" -ge 3 ] || fail "a run longer than the interval made $n fsync calls: $(cat "$T/long.st")"
profile_ok "$T/long.json" || fail "the long run's profile"
echo "fsync calls: short run 0, --fsync-interval=0 $(grep -cE 'f(data)?sync\(' "$T/zero.st"), long run $n"
exit 0

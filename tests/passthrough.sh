#!/bin/sh
# The command's stdout and stderr pass through byte for byte; a closed downstream reaches the
# command; huge lines cost bounded memory; --output-timeout.
. "$TOP_SRCDIR/tests/lib.sh"
R="$RESMON_RUN -q --no-profile --output-timeout=60"   # forces interposition

# Binary data, every byte value, through both streams.
"$HELPER" bytes 3000000 > "$T/want"
$R -- "$HELPER" bytes 3000000 > "$T/got" || fail "bytes run failed"
cmp -s "$T/want" "$T/got" || fail "stdout bytes differ"
$R -- sh -c "'$HELPER' bytes 3000000 >&2" 2> "$T/got2" || fail "stderr run failed"
cmp -s "$T/want" "$T/got2" || fail "stderr bytes differ"
# Through a pipe downstream as well (the non-blocking writer).
$R -- "$HELPER" bytes 3000000 | cat > "$T/got3"
cmp -s "$T/want" "$T/got3" || fail "bytes through a pipe differ"

# A 100 MiB line without a newline: all of it arrives, and memory stays bounded.
n=$((100 * 1024 * 1024))
got=$("$HELPER" rss-of $R -- "$HELPER" bigline $n 2>"$T/rss" | wc -c)
[ "$got" -eq $n ] || fail "bigline: $got bytes of $n"
rss=$(sed -n 's/^maxrss //p' "$T/rss")
[ "$rss" -lt 65536 ] || fail "bigline: peak RSS $rss KiB"

# A closed downstream: the command sees EPIPE, exactly as if it wrote there itself.
new_events
$R -- "$HELPER" epipe | head -c 1 >/dev/null
wait_event "write failed EPIPE" >/dev/null
# ...and a command that does not catch SIGPIPE dies of it: so does resmon-run.
( $R -- "$HELPER" bytes 100000000; echo $? > "$T/st" ) | head -c 1 >/dev/null
st=$(cat "$T/st")
[ "$st" = 141 ] || fail "SIGPIPE: status $st"

# Order within a stream is kept.
$R -- "$HELPER" tick 50 0 > "$T/ticks"
seq 0 49 | sed 's/^/tick /' | cmp -s - "$T/ticks" || fail "ticks out of order"

# Starved (resmon-run pinned to the command's CPU at the lowest priority, the command faster than
# it): every line arrives, in every mode — after the command exits, the pipe is drained to its end.
{
    starve() { taskset -c 0 nice -n 19 "$@"; }
    cmd="taskset -c 0 seq 1 400000"
    for mode in default foreground no-kill-leftovers timeout-o timeout-output-timeout; do
        case $mode in
        default) n=$(starve "$RESMON_RUN" -q -o "$T/starve.json" -- $cmd | wc -l) ;;
        foreground) n=$(starve "$RESMON_RUN" -q -f -o "$T/starve.json" -- $cmd | wc -l) ;;
        no-kill-leftovers) n=$(starve "$RESMON_RUN" -q --no-kill-leftovers -o "$T/starve.json" -- $cmd | wc -l) ;;
        timeout-o) n=$(starve "$TIMEOUT_LINK" -o "$T/starve.json" 60 $cmd | wc -l) ;;
        timeout-output-timeout) n=$(starve "$TIMEOUT_LINK" --output-timeout 30 60 $cmd | wc -l) ;;
        esac
        [ "$n" = 400000 ] || fail "starved, $mode: $n lines of 400000"
    done
    # A leftover keeps the pipe open and writes later: what the command wrote is all there.
    n=$(starve "$RESMON_RUN" -q --no-kill-leftovers --no-profile --output-timeout 60 -- sh -c \
        "$cmd; '$HELPER' daemon 5 >/dev/null" | wc -l)
    [ "$n" = 400000 ] || fail "starved, with a leftover holding the pipe: $n lines of 400000"
}

# --output-timeout: silence counts as a timeout; regular output does not.
expect_status 124 "$RESMON_RUN" --no-profile --output-timeout=0.3 -- "$HELPER" print-hang 30 >/dev/null
expect_status 0 "$RESMON_RUN" --no-profile --output-timeout=2 -- "$HELPER" tick 6 0.1 >/dev/null
expect_status 124 "$TIMEOUT_LINK" --output-timeout=0.3 100 "$HELPER" print-hang 30 >/dev/null
exit 0

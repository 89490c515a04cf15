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

# --output-timeout: silence counts as a timeout; regular output does not.
expect_status 124 "$RESMON_RUN" --no-profile --output-timeout=0.3 -- "$HELPER" print-hang 30 >/dev/null
expect_status 0 "$RESMON_RUN" --no-profile --output-timeout=2 -- "$HELPER" tick 6 0.1 >/dev/null
expect_status 124 "$TIMEOUT_LINK" --output-timeout=0.3 100 "$HELPER" print-hang 30 >/dev/null
exit 0

#!/bin/sh
# GNU timeout behaviours (supervision.md §1) through the resmon-timeout name.
. "$TOP_SRCDIR/tests/lib.sh"
TO="$TIMEOUT_LINK"

# The duration grammar at the command line.
expect_status 124 "$TO" 1e-10000 "$HELPER" sleep 30
expect_status 0 "$TO" 1e400 true
expect_status 0 "$TO" 2.34e+5d true
expect_status 0 "$TO" 0 true
expect_status 0 "$TO" 0.5m true
expect_status 125 "$TO" -- -0.1 true
expect_status 125 "$TO" -- -1e-10000 true
expect_status 125 "$TO" invalid true
expect_status 125 "$TO" 1x true
expect_status 125 "$TO" -s NOSUCHSIG 1 true

# An unrelated child that existed before exec is not mistaken for the command.
expect_status 0 sh -c "'$HELPER' sleep 3 & exec '$TO' 10 true"
# The command is waited for by pid even with such a child around, on timeout too.
expect_status 124 sh -c "'$HELPER' sleep 3 & exec '$TO' 0.1 '$HELPER' sleep 30"

# A parent that ignores or blocks SIGCHLD or SIGALRM does not break it.
expect_status 0 "$HELPER" exec-with CHLD ignore "$TO" 10 true
expect_status 0 "$HELPER" exec-with CHLD block "$TO" 10 true
expect_status 124 "$HELPER" exec-with CHLD ignore "$TO" 0.1 "$HELPER" sleep 30
expect_status 124 "$HELPER" exec-with ALRM ignore "$TO" 0.1 "$HELPER" sleep 30
expect_status 124 "$HELPER" exec-with ALRM block "$TO" 0.1 "$HELPER" sleep 30

# An external SIGALRM means "time out now".
new_events
"$TO" 100 "$HELPER" sleep 100 &
sup=$!
wait_event "ready *" >/dev/null
kill -ALRM $sup
wait $sup
[ $? -eq 124 ] || fail "SIGALRM did not time out"

# Inherited ignored signals stay ignored for the command.
out=$("$HELPER" exec-with PIPE ignore "$TO" 10 "$HELPER" sigdisp PIPE)
[ "$out" = "ignored unblocked" ] || fail "PIPE disposition for the command: $out"
out=$("$TO" 10 "$HELPER" sigdisp TERM)
[ "$out" = "default unblocked" ] || fail "TERM disposition for the command: $out"
out=$("$TO" 10 "$HELPER" sigdisp CHLD)
[ "$out" = "default unblocked" ] || fail "CHLD disposition for the command: $out"

# ... but those GNU timeout catches (ALRM, INT, QUIT, HUP, TERM and its --signal) reach the
# command at their default, as its handlers' reset by exec gives them: a script's background
# `timeout` (the shell ignores INT there) stops its command on INT, and exits 130 at once.
for s in INT QUIT HUP TERM ALRM; do
    out=$("$HELPER" exec-with $s ignore "$TO" 10 "$HELPER" sigdisp $s)
    [ "$out" = "default unblocked" ] || fail "$s ignored by the caller: the command's disposition is $out"
done
out=$("$HELPER" exec-with USR1 ignore "$TO" -s USR1 10 "$HELPER" sigdisp USR1)
[ "$out" = "default unblocked" ] || fail "the --signal ignored by the caller: the command's disposition is $out"
out=$("$HELPER" exec-with USR1 ignore "$TO" 10 "$HELPER" sigdisp USR1)
[ "$out" = "ignored unblocked" ] || fail "USR1 ignored by the caller: the command's disposition is $out"
new_events
"$HELPER" exec-with INT ignore "$TO" 100 "$HELPER" sleep 100 &
sup=$!
wait_event "ready *" >/dev/null
kill -INT $sup
wait $sup
st=$?
[ $st -eq 130 ] || fail "INT to a background resmon-timeout: status $st, expected 130"

# A closed stderr does not change the status of a timeout.
expect_status 124 "$TO" -v 0.1 "$HELPER" sleep 30 2>&-
expect_status 124 "$TO" -v 0.1 "$HELPER" sleep 30 2>/dev/full

# -v says which signal went to which command, with the program's name.
alarmed "$TO" -v -k 0.1 100 "$HELPER" ignore-term 30
msg=$(cat "$T/alarmed.err")
echo "$msg" | grep -qx "resmon-timeout: sending signal TERM to command '$HELPER'" || fail "verbose TERM: $msg"
echo "$msg" | grep -qx "resmon-timeout: sending signal KILL to command '$HELPER'" || fail "verbose KILL: $msg"
msg=$("$TO" -v -s 0 -k 0.2 0.1 "$HELPER" sleep 30 2>&1)
echo "$msg" | grep -qx "resmon-timeout: sending signal 0 to command '$HELPER'" || fail "verbose 0: $msg"
# Otherwise silent.
msg=$("$TO" 0.1 "$HELPER" sleep 30 2>&1)
[ -z "$msg" ] || fail "not silent: $msg"

# Nested supervisors: the outer one times out, the inner one passes it on.
expect_status 124 "$TO" 0.2 "$TO" 10 "$HELPER" sleep 30
expect_status 124 "$TO" 10 "$TO" 0.2 "$HELPER" sleep 30

# The command still gets the timeout signal when the supervisor is SIGKILLed.
new_events
"$TO" 100 "$HELPER" on-signal 100 &
sup=$!
wait_event "ready *" >/dev/null
kill -KILL $sup
wait_event "signal 15" >/dev/null

# As PID 1 of a new PID namespace.
if unshare --pid --fork --mount-proc true 2>/dev/null; then
    expect_status 124 unshare --pid --fork --mount-proc "$TO" 0.1 "$HELPER" sleep 30
    expect_status 0 unshare --pid --fork --mount-proc "$TO" 10 true
fi

# --foreground: only the command is signalled, its children are left alone.
expect_status 124 "$TO" --foreground 0.1 "$HELPER" sleep 30
exit 0

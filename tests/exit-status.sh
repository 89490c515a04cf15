#!/bin/sh
# Every exit status of resmon-run, in both synopses.
. "$TOP_SRCDIR/tests/lib.sh"
R="$RESMON_RUN --no-profile"

expect_status 0 $R -- true
expect_status 1 $R -- false
expect_status 42 $R -- "$HELPER" exit 42
expect_status 124 $R -t 0.1 -- "$HELPER" sleep 30
expect_status 124 "$TIMEOUT_LINK" 0.1 "$HELPER" sleep 30
# TERM ignored: KILL after -k, and 137 tells the forced kill apart.
expect_status 137 alarmed "$TIMEOUT_LINK" -k 0.1 100 "$HELPER" ignore-term 30
expect_status 137 "$TIMEOUT_LINK" -s KILL 0.1 "$HELPER" sleep 30
# --preserve-status: the command's own status after a timeout.
expect_status 143 "$TIMEOUT_LINK" -p 0.1 "$HELPER" sleep 30
expect_status 137 "$TIMEOUT_LINK" -p -s KILL 0.1 "$HELPER" sleep 30
# The command exits on its own after catching the signal: still a timeout.
expect_status 124 alarmed "$TIMEOUT_LINK" 100 "$HELPER" on-signal 30
expect_status 0 alarmed "$TIMEOUT_LINK" -p 100 "$HELPER" on-signal 30
# Cannot invoke / not found.
expect_status 126 $R -- "$T"
expect_status 127 $R -- "$T/no-such-command"
expect_status 126 "$TIMEOUT_LINK" 10 "$T"
expect_status 127 "$TIMEOUT_LINK" 10 no-such-command-anywhere
# GNU timeout's synopsis given to resmon-run: still 127, with the way to say it.
st=0
$R 5 "$HELPER" exit 0 2>"$T/habit.err" || st=$?
[ $st = 127 ] && grep -q "hint: for a timeout of 5, run 'resmon-run -t 5 -- $HELPER \.\.\.' or 'resmon-timeout 5 $HELPER \.\.\.'" "$T/habit.err" ||
    fail "resmon-run 5 CMD: status $st, $(cat "$T/habit.err")"
# ... and only then: a command that is no duration, or resmon-timeout's, gets no hint.
$R -- no-such-command-anywhere 2>"$T/nohint.err"
"$TIMEOUT_LINK" 10 5 2>>"$T/nohint.err"
grep -q hint "$T/nohint.err" && fail "a hint where none applies: $(cat "$T/nohint.err")"
# Died of a signal: resmon-run dies of the same signal (the shell reports 128+N).
expect_status 139 sh -c "$R -- '$HELPER' killself SEGV"
expect_status 138 sh -c "$R -- '$HELPER' killself USR1"
# Usage errors.
expect_status 125 $R -t junk -- true
expect_status 125 "$TIMEOUT_LINK" 42D true
exit 0

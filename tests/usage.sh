#!/bin/sh
# Bad usage: one line naming the problem, exit 125. --help and --version exit 0.
. "$TOP_SRCDIR/tests/lib.sh"

check() { # check PATTERN ARGS...
    pat=$1; shift
    msg=$("$RESMON_RUN" "$@" 2>&1 >/dev/null); st=$?
    [ $st -eq 125 ] || fail "'$*' exited $st"
    [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] || fail "'$*' printed more than one line: $msg"
    printf '%s\n' "$msg" | grep -q "$pat" || fail "'$*' said: $msg"
}
check "no command given"
check "unrecognized option '--bogus'" --bogus -- true
check "invalid option -- 'Z'" -Z true
check "invalid time interval 'x'" -t x -- true
check "invalid time interval '-1'" --kill-after=-1 -- true
check "BOGUS: invalid signal" -s BOGUS -- true
check "invalid --containment" --containment=jail -- true
check "invalid --parse" --parse=cobol -- true
check "requires an argument" -t
check "expected KEY=VALUE" --meta novalue -- true
check "invalid --max-markers value '-5'" --max-markers=-5 -- true
check "invalid --max-markers value '1e6'" --max-markers=1e6 -- true
check "invalid --max-markers value '99999999999999999999'" --max-markers=99999999999999999999 -- true
check "invalid --cpu-profile rate '0'" --cpu-profile=0 -- true
check "invalid --cpu-profile rate '10001'" --cpu-profile=10001 -- true
check "invalid --cpu-profile rate '99hz'" --cpu-profile=99hz -- true
# Metadata the profile's format owns would make a profile that does not load.
for key in version preprocessedProfileVersion startTime interval processType markerSchema; do
    check "format owns this key" --meta "$key=oops" -- true
done
check "invalid --memory-limit 'lots' (a size" --memory-limit=lots -- true
check "invalid --memory-limit '0'" --memory-limit=0 -- true
check "invalid --memory-limit '-64M'" --memory-limit=-64M -- true
check "invalid --tasks-limit '0' (a count of processes and threads" --tasks-limit=0 -- true
check "invalid --tasks-limit '12x'" --tasks-limit=12x -- true
check "invalid time interval 'forever'" --cpu-limit=forever -- true
check "invalid --dump list 'perl' (go, java, python)" --dump=perl -- true
check "invalid --dump list 'go,,java'" --dump=go,,java -- true
check "invalid time interval 'soon'" --dump-budget=soon -- true
check "empty --dump-file path" --dump-file= -- true
check "too short" -i 1e-9 -- true
check "too short" -i 0.001 -- true
# Paths that cannot hold a profile: said by what they are.
mkfifo "$T/fifo"
check "is a FIFO, not a regular file" -o "$T/fifo" -- true
check "is a character device, not a regular file" -o /dev/null -- true
check "is a character device, not a regular file" -o /dev/full -- true
check "is a symbolic link" -o "$(ln -s "$T/x" "$T/link" && echo "$T/link")" -- true
# --recover of a stream a live run writes, in place: refused (the run's path would be taken).
new_events
"$RESMON_RUN" -q -o "$T/live.json" -- "$HELPER" sigcheck "$T/live.json" 30 >/dev/null 2>&1 &
live=$!
wait_event "ready *" >/dev/null
check "being written by a running resmon-run" --recover "$T/live.json"
# and a second run given the same path: refused, the first one's stream untouched
check "another resmon-run is writing it" -o "$T/live.json" -- true
kill -TERM $live
wait $live

msg=$("$TIMEOUT_LINK" 2>&1); [ $? -eq 125 ] || fail "timeout mode without operand"
echo "$msg" | grep -q "missing operand" || fail "timeout mode: $msg"
msg=$("$TIMEOUT_LINK" 10 2>&1); [ $? -eq 125 ] || fail "timeout mode without command"

"$RESMON_RUN" --help | grep -q "^Usage: resmon-run \[OPTION\]... \[--\] COMMAND \[ARG\]..." || fail "--help"
"$TIMEOUT_LINK" --help | grep -q "^Usage: resmon-timeout \[OPTION\]... DURATION COMMAND \[ARG\]..." || fail "timeout --help"
"$RESMON_RUN" --version | grep -q "^resmon-run (resmon-run) [0-9]" || fail "--version"
exit 0

#!/bin/sh
# The seccomp sandbox (supervision.md §5): resmon-run locks itself down while the command runs
# (and not the command), --no-sandbox leaves it alone, full runs work under the filter in both
# containment tiers, and the --deny filters refuse what they promise to the command only.
. "$TOP_SRCDIR/tests/lib.sh"

status_field() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"; }
[ -n "$(status_field $$ Seccomp)" ] || skip "the kernel has no seccomp"
base_filters=$(status_field $$ Seccomp_filters)
base_filters=${base_filters:-0}
base_mode=$(status_field $$ Seccomp)

# start_run [PREFIX...] -- ARGS...: resmon-run ARGS in the background (run through PREFIX), running
# "helper sleep"; sets $sup (its pid) and $cmd (the helper's). The command's "ready" line reaches the
# event FIFO through resmon-run's pass-through (--output-timeout interposes), which runs only
# after the lock-down: when it arrives, the filter is in place.
start_run() {
    _pre=""
    while [ "$1" != -- ]; do _pre="$_pre $1"; shift; done
    shift
    new_events
    $_pre "$RESMON_RUN" --no-profile --output-timeout=100 "$@" -- \
        sh -c "echo ready \$\$; exec '$HELPER' sleep 60" >"$HELPER_EVENTS" &
    sup=$!
    cmd=$(wait_event "ready *" | cut -d' ' -f2)
}
stop_run() {
    kill -TERM "$sup"
    wait "$sup"
}

# While the command runs, resmon-run is filtered, has no_new_privs, and the command is neither.
start_run --
msg=$(status_field "$sup" Seccomp)
[ "$msg" = 2 ] || fail "resmon-run not in seccomp filter mode: Seccomp $msg"
msg=$(status_field "$sup" NoNewPrivs)
[ "$msg" = 1 ] || fail "resmon-run without no_new_privs: $msg"
msg=$(status_field "$sup" Seccomp_filters)
[ -z "$msg" ] || [ "$msg" -eq $((base_filters + 1)) ] || fail "resmon-run has $msg filters"
[ "$(status_field "$cmd" Seccomp)" = "$base_mode" ] || fail "the command inherited the filter"
[ "$(status_field "$cmd" NoNewPrivs)" = 0 ] || fail "the command got no_new_privs"
stop_run

# --no-sandbox: nothing is installed.
start_run -- --no-sandbox
[ "$(status_field "$sup" Seccomp)" = "$base_mode" ] || fail "--no-sandbox: Seccomp $(status_field "$sup" Seccomp)"
[ "$(status_field "$sup" NoNewPrivs)" = 0 ] || fail "--no-sandbox: no_new_privs set"
stop_run


# Full runs under the filter, both tiers: timeout with KILL, leftovers, pass-through,
# --output-timeout, a profile path (the finalizer creates and renames files under the filter).
tiers=subreaper
cgroup_available && tiers="$tiers cgroup"
for tier in $tiers; do
    R="$RESMON_RUN -q --containment=$tier --grace=0.3 -o $T/profile-$tier.json"
    # the deadline once the command ignores TERM (ALRM is resmon-run's timer, as GNU timeout's)
    st=0
    alarmed $R -t 60 -k 0.3 -- "$HELPER" ignore-term 30 || st=$?
    [ $st = 137 ] || fail "$tier: TERM ignored: exit $st, not 137: $(cat "$T/alarmed.err")"
    new_events
    expect_status 0 $R -- "$HELPER" daemon 60
    pid=$(wait_event "daemon *" | cut -d' ' -f2)
    alive "$pid" && fail "$tier: daemon $pid survived under the sandbox"
    out=$($R --output-timeout=10 -- sh -c 'echo out; echo err >&2; exit 3' 2>"$T/err"); st=$?
    [ $st -eq 3 ] || fail "$tier: pass-through run exited $st"
    [ "$out" = out ] || fail "$tier: stdout '$out'"
    [ "$(cat "$T/err")" = err ] || fail "$tier: stderr '$(cat "$T/err")'"
    expect_status 124 $R --output-timeout=0.3 -- "$HELPER" sleep 30
    # The command's death by a signal is re-raised by resmon-run (setrlimit, sigaction, tgkill).
    expect_status 143 $R -- sh -c 'kill -TERM $$'
    # The last run's profile: created beside the stream, fsynced and renamed under the filter.
    if [ -x "$HELPERS/check-profile" ]; then
        "$HELPERS/check-profile" "$T/profile-$tier.json" >/dev/null || fail "$tier: profile invalid"
    fi
done

# --deny-network: no TCP for the command (the same connection works without it); Unix sockets do.
new_events
"$HELPER" listen-tcp 60 &
listener=$!
port=$(wait_event "listening *" | cut -d' ' -f2)
out=$("$RESMON_RUN" --no-profile -- "$HELPER" connect-tcp "$port")
[ "$out" = "connect-tcp: connect ok" ] || fail "without --deny-network: $out"
out=$("$RESMON_RUN" --no-profile --deny-network -- "$HELPER" connect-tcp "$port")
[ "$out" = "connect-tcp: socket EACCES" ] || fail "--deny-network: $out"
out=$("$RESMON_RUN" --no-profile --deny=network -- "$HELPER" connect-tcp "$port")
[ "$out" = "connect-tcp: socket EACCES" ] || fail "--deny=network: $out"
out=$("$RESMON_RUN" --no-profile --deny-network -- "$HELPER" unix-socket)
[ "$out" = "unix-socket: ok" ] || fail "--deny-network broke Unix sockets: $out"
# Children of the command inherit it.
out=$("$RESMON_RUN" --no-profile --deny-network -- sh -c "'$HELPER' connect-tcp $port")
[ "$out" = "connect-tcp: socket EACCES" ] || fail "--deny-network, grandchild: $out"
# A connected socket the command inherits is closed (Unix sockets are left: the marker socket).
probe='if true >&3 2>/dev/null; then echo open; else echo closed; fi'
out=$("$HELPER" with-tcp-fd "$port" "$RESMON_RUN" --no-profile -- sh -c "$probe")
[ "$out" = open ] || fail "without --deny-network, an inherited socket: $out"
out=$("$HELPER" with-tcp-fd "$port" "$RESMON_RUN" --no-profile --deny-network -- sh -c "$probe")
[ "$out" = closed ] || fail "--deny-network left an inherited TCP socket open: $out"
kill "$listener"
wait "$listener" 2>/dev/null

# --deny=ptrace: a child cannot be seized, memory cannot be read as a debugger would. (In sanitizer
# builds the helper's leak checker needs ptrace itself: the documented breakage; turned off here.)
out=$("$RESMON_RUN" --no-profile -- "$HELPER" ptrace-child)
if [ "$out" = "$(printf 'ptrace-child: ptrace ok\nptrace-child: process_vm_readv ok')" ]; then
    out=$(ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
        "$RESMON_RUN" --no-profile --deny=ptrace -- "$HELPER" ptrace-child)
    [ "$out" = "$(printf 'ptrace-child: ptrace EPERM\nptrace-child: process_vm_readv EPERM')" ] ||
        fail "--deny=ptrace: $out"
else
    echo "--deny=ptrace not checked: ptrace is refused here anyway ($out)"
fi

# --deny=namespaces: no new user namespace.
out=$("$RESMON_RUN" --no-profile --deny=namespaces -- "$HELPER" unshare-user)
[ "$out" = "unshare-user: unshare EPERM" ] || fail "--deny=namespaces: $out"
out=$(ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$RESMON_RUN" --no-profile --deny=all -- "$HELPER" unix-socket)
[ "$out" = "unix-socket: ok" ] || fail "--deny=all broke Unix sockets: $out"

# The filters are the command's alone, with or without the lock-down of resmon-run.
start_run -- --no-sandbox --deny=ptrace,network
[ "$(status_field "$cmd" Seccomp)" = 2 ] || fail "--deny: the command is not filtered"
[ "$(status_field "$cmd" NoNewPrivs)" = 1 ] || fail "--deny: the command has no no_new_privs"
[ "$(status_field "$sup" Seccomp)" = "$base_mode" ] || fail "--deny filters reached resmon-run"
stop_run

# A bad class list is a usage error.
msg=$("$RESMON_RUN" --deny=network,bogus -- true 2>&1); st=$?
[ $st -eq 125 ] || fail "--deny=bogus exited $st"
echo "$msg" | grep -q "invalid --deny" || fail "--deny=bogus said: $msg"
exit 0

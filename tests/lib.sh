# Shared by the integration tests: a scratch directory, an event FIFO the helpers announce on,
# and assertions. Source it first: . "$TOP_SRCDIR/tests/lib.sh"
set -u
: "${RESMON_RUN:?}" "${HELPERS:?}"
HELPER="$HELPERS/helper"
T=$(mktemp -d "${TMPDIR:-/tmp}/resmon-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
TIMEOUT_LINK="$T/resmon-timeout"
ln -s "$RESMON_RUN" "$TIMEOUT_LINK"
# new_events: a fresh event FIFO for the next step, held open read-write on fd 9 (helpers never
# block opening it, no event is lost), so late events of earlier steps cannot be mistaken for it.
_events_n=0
new_events() {
    _events_n=$((_events_n + 1))
    HELPER_EVENTS="$T/events.$_events_n"
    export HELPER_EVENTS
    mkfifo "$HELPER_EVENTS"
    exec 9<>"$HELPER_EVENTS"
}
new_events

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

# wait_event PATTERN [SECONDS]: read events until one matches the shell PATTERN; prints it.
wait_event() {
    _deadline=$(( $(date +%s) + ${2:-20} ))
    while :; do
        _left=$(( _deadline - $(date +%s) ))
        [ "$_left" -gt 0 ] || fail "no event matching '$1'"
        if read -r -t "$_left" _ev <&9; then
            case "$_ev" in $1) echo "$_ev"; return 0 ;; esac
        else
            fail "no event matching '$1'"
        fi
    done
}

# expect_status N CMD...: run CMD, fail unless it exits N.
expect_status() {
    _want=$1; shift
    "$@"; _got=$?
    [ "$_got" -eq "$_want" ] || fail "'$*' exited $_got, expected $_want"
}

# alive PID: true while PID exists and is not a zombie.
alive() {
    [ -e "/proc/$1/stat" ] || return 1
    _st=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$_st" != Z ] && [ "$_st" != X ]
}

cgroup_available() {
    "$RESMON_RUN" --no-profile --containment=cgroup -- true 2>/dev/null
}

# alarmed CMD...: run a supervisor CMD in the background, wait until its command says "ready",
# then make it time out at once (SIGALRM), and return the supervisor's exit status. Output of CMD
# goes to $T/alarmed.out and $T/alarmed.err. No race with the command's start-up.
alarmed() {
    new_events
    "$@" >"$T/alarmed.out" 2>"$T/alarmed.err" &
    _sup=$!
    wait_event "ready *" >/dev/null
    kill -ALRM $_sup
    wait $_sup
}

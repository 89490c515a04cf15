# Shared by the integration tests: a scratch directory, an event FIFO the helpers announce on,
# and assertions. Source it first: . "$TOP_SRCDIR/tests/lib.sh"
set -u
: "${RESMON_RUN:?}" "${HELPERS:?}"
HELPER="$HELPERS/helper"
T=$(mktemp -d "${TMPDIR:-/tmp}/resmon-test.XXXXXX")
trap _at_exit EXIT
# Every test is bounded: after TEST_LIMIT seconds (600 unless told) a hang fails it, with the tree
# of processes it hung in printed to its log, instead of holding the whole run.
"$HELPERS/hangcheck" $$ "${TEST_LIMIT:-600}" || { echo "FAIL: no $HELPERS/hangcheck" >&2; exit 1; }
# resmon-timeout: a link to the binary under test, or the one given (an installed package's).
if [ -n "${RESMON_TIMEOUT:-}" ]; then
    TIMEOUT_LINK=$RESMON_TIMEOUT
else
    TIMEOUT_LINK="$T/resmon-timeout"
    ln -s "$RESMON_RUN" "$TIMEOUT_LINK"
fi
# new_events: a fresh event FIFO for the next step, held open read-write on fd 9 (helpers never
# block opening it, no event is lost), so late events of earlier steps cannot be mistaken for it.
_events_n=0
new_events() {
    _events_n=$((_events_n + 1))
    # (one made in a subshell did not count here)
    while [ -e "$T/events.$_events_n" ]; do _events_n=$((_events_n + 1)); done
    HELPER_EVENTS="$T/events.$_events_n"
    export HELPER_EVENTS
    mkfifo "$HELPER_EVENTS"
    exec 9<>"$HELPER_EVENTS"
}
new_events

fail() { echo "FAIL: $*" >&2; exit 1; }

# go_cache: the Go build cache the tests share, so that the standard library is compiled once per
# user rather than in every test: the user's own cache directory, else the test's scratch one.
go_cache() {
    _gc=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/resmon-tests-go
    if mkdir -p "$_gc" 2>/dev/null && [ -w "$_gc" ]; then echo "$_gc"; else echo "$T/go-cache"; fi
}

# ---- every profile a test leaves goes through the real front-end ----------------------------
# The Firefox Profiler's own loader, bundled for node (../shared/ffprof). Without node or it (a
# release tarball), the profiles are still checked structurally.
FFPROF=${FFPROF:-$TOP_SRCDIR/../shared/ffprof/validate-profile.cjs}
frontend_available() { command -v node >/dev/null 2>&1 && [ -f "$FFPROF" ]; }

# frontend FILE...: load each FILE (a full profile, plain or gzip) with the front-end's import code
# and hold it to what a user must see (tests/frontend-check.cjs); prints a line of facts for each.
# Each file that passed is noted (its size, time, inode and name) in $T/.loaded:
# check_every_profile does not load it again while it is unchanged.
frontend() {
    [ -s "$T/.schemas.json" ] || "$HELPERS/check-profile" --schemas >"$T/.schemas.json" ||
        { echo "FAIL: check-profile --schemas" >&2; return 1; }
    node "$TOP_SRCDIR/tests/frontend-check.cjs" "$FFPROF" "$T/.schemas.json" "$@" || return 1
    for _lf in "$@"; do file_stamp "$_lf" >>"$T/.loaded"; done
}

# file_stamp FILE: a line that changes when FILE does.
file_stamp() { stat -c '%s %y %i %n' "$1"; }

# structure_ok FILE: FILE is a full profile the structural checker accepts. A gzip profile is
# checked decompressed.
structure_ok() {
    case "$(od -An -tx1 -N2 "$1" 2>/dev/null | tr -d ' ')" in
    1f8b)
        gzip -dc <"$1" >"$T/.unzipped.json" || { echo "FAIL: $1: not gzip" >&2; return 1; }
        "$HELPERS/check-profile" "$T/.unzipped.json" ;;
    *) "$HELPERS/check-profile" "$1" ;;
    esac
}

# profile_ok FILE: FILE is a full profile the structural checker and (when there) the front-end
# accept; a gzip profile is loaded as it is.
profile_ok() {
    structure_ok "$1" || return 1
    if frontend_available; then frontend "$1" >/dev/null || return 1; fi
    return 0
}

# ---- every OTLP/JSON file goes through an OTLP decoder as well ------------------------------
# protobufjs and the official OTLP definitions (opentelemetry-proto, as OpenTelemetry's JS
# exporter ships them), pinned in tests/otlp/package-lock.json and installed by scripts/setup.
# Without them (a release tarball, no npm), only tests/otlp-check.cjs runs, and the test says so.
OTLP_MODULES=${OTLP_MODULES:-$TOP_SRCDIR/tests/otlp/node_modules}
otlp_decoder_available() { command -v node >/dev/null 2>&1 && [ -d "$OTLP_MODULES/protobufjs" ]; }
# otlp_decode FILE: FILE decoded as OTLP (tests/otlp-decode.cjs); prints its line of facts.
otlp_decode() { node "$TOP_SRCDIR/tests/otlp-decode.cjs" "$OTLP_MODULES" "$1"; }

# junit_valid FILE: FILE is valid against the schema the Jenkins xUnit plugin checks JUnit input
# with (tests/fixtures/junit/junit-10.xsd, vendored) and against tests/fixtures/junit/junit.xsd.
junit_valid() {
    xmllint --noout --schema "$TOP_SRCDIR/tests/fixtures/junit/junit-10.xsd" "$1" &&
        xmllint --noout --schema "$TOP_SRCDIR/tests/fixtures/junit/junit.xsd" "$1"
}

# At the end of a passing test: every profile it left in $T is checked, and every stream (what a
# run that was killed, or is still writing, leaves) must convert, with --recover, into one; every
# JUnit report must be valid against tests/fixtures/junit/junit-10.xsd and junit.xsd, every OTLP/JSON file pass
# tests/otlp-check.cjs and the OTLP decoder.
# Files under $T/raw/ are inputs a test made broken on purpose.
check_every_profile() {
    find "$T" -type f ! -name '.*' ! -path "$T/raw/*" 2>/dev/null | sort >"$T/.profiles"
    _checked=0 _otlp=0
    # the front-end loads them all at the end, in one call
    : >"$T/.frontend"
    while IFS= read -r _f; do
        _head=$(head -c 14 "$_f" 2>/dev/null | tr -d '\000')
        _magic=$(od -An -tx1 -N2 "$_f" 2>/dev/null | tr -d ' ')
        if [ "$_head" = '{"type":"meta"' ]; then
            _rec="$T/.recovered-$_checked.json"
            "$RESMON_RUN" --recover "$_f" -o "$_rec" 2>"$T/.recover.err" ||
                { echo "FAIL: $_f: the stream does not convert: $(cat "$T/.recover.err")" >&2; return 1; }
            structure_ok "$_rec" || { echo "FAIL: $_f: its conversion is not a valid profile" >&2; return 1; }
            echo "$_rec" >>"$T/.frontend"
        elif [ "$(printf %.5s "$_head")" = '<?xml' ] && grep -q '<testsuites' "$_f"; then
            # a JUnit report (--junit): valid against the Jenkins schemas
            if command -v xmllint >/dev/null 2>&1; then
                junit_valid "$_f" 2>"$T/.xmllint.err" ||
                    { echo "FAIL: $_f: not a valid JUnit report: $(cat "$T/.xmllint.err")" >&2; return 1; }
            fi
            continue
        elif [ "$_head" = '{"resourceSpan' ]; then
            # an OTLP/JSON file (--otlp): held to the OTLP definitions
            if command -v node >/dev/null 2>&1; then
                node "$TOP_SRCDIR/tests/otlp-check.cjs" "$_f" >/dev/null 2>"$T/.otlp.err" ||
                    { echo "FAIL: $_f: not valid OTLP/JSON: $(cat "$T/.otlp.err")" >&2; return 1; }
            fi
            if otlp_decoder_available; then
                otlp_decode "$_f" >/dev/null 2>"$T/.otlp.err" ||
                    { echo "FAIL: $_f: the OTLP decoder refuses it: $(cat "$T/.otlp.err")" >&2; return 1; }
            fi
            _otlp=$((_otlp + 1))
            continue
        elif [ "$(printf %.8s "$_head")" = '{"meta":' ] || [ "$_magic" = 1f8b ]; then
            structure_ok "$_f" || { echo "FAIL: $_f: not a valid profile" >&2; return 1; }
            # not again if it was loaded as it is now (frontend)
            grep -qxF "$(file_stamp "$_f")" "$T/.loaded" 2>/dev/null || echo "$_f" >>"$T/.frontend"
        else
            continue
        fi
        _checked=$((_checked + 1))
    done <"$T/.profiles"
    if [ -s "$T/.frontend" ] && frontend_available; then
        # (file names without newlines: the tests' own)
        _old_ifs=$IFS
        IFS='
'
        # shellcheck disable=SC2046
        set -- $(cat "$T/.frontend")
        IFS=$_old_ifs
        frontend "$@" >/dev/null || { echo "FAIL: a profile the front-end does not load as it should (above)" >&2; return 1; }
    fi
    if [ "$_otlp" -gt 0 ]; then
        if otlp_decoder_available; then
            echo "$_otlp OTLP files checked, and decoded with the OTLP protobuf definitions"
        else
            echo "$_otlp OTLP files checked; SKIPPED decoding them with the OTLP protobuf definitions ($OTLP_MODULES missing: scripts/setup installs them)"
        fi
    fi
    if [ "$_checked" -gt 0 ]; then
        if frontend_available; then
            echo "$_checked profiles checked, and loaded by the front-end"
        else
            echo "$_checked profiles checked (the front-end's loader is not here: node or $FFPROF missing)"
        fi
    fi
    return 0
}

_at_exit() {
    _st=$?
    trap - EXIT
    # KEEP_T=DIR keeps a copy of the scratch directory, to look at what a test left
    [ -n "${KEEP_T:-}" ] && rm -rf "$KEEP_T" && cp -r "$T" "$KEEP_T"
    if [ "$_st" -eq 0 ]; then
        check_every_profile || _st=1
    fi
    rm -rf "$T"
    exit "$_st"
}
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

# stream_shows FILE TEXT: wait until FILE (a run's stream) holds TEXT, e.g. a test's open line.
stream_shows() {
    new_events
    "$HELPER" wait-file "$1" "$2" &
    wait_event "found *" >/dev/null
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

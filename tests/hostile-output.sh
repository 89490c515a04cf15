#!/bin/sh
# Hostile output: what a command prints reaches every report exactly once and can forge nothing.
# A stop counts each test once, whatever the command prints while it stops; control characters
# in test names and messages reach no sink raw (stderr summary, GitHub workflow commands and job
# summary, --compare's text and Markdown); the smaller promises of --no-profile and --recover.
. "$TOP_SRCDIR/tests/lib.sh"
command -v xmllint >/dev/null 2>&1 || skip "xmllint (libxml2-utils) is not installed"
frontend_available || skip "the front-end's loader is not here (node or $FFPROF missing)"

# qn FILE XPATH: how many nodes XPATH selects.
qn() { xmllint --xpath "count($2)" "$1" 2>/dev/null; }
expect() { # expect WHAT GOT WANT
    [ "$2" = "$3" ] || fail "$1: '$2', expected '$3'"
}
# type_count FACTS TYPE: how many markers of TYPE the front-end's line of facts counts.
type_count() {
    _n=$(printf '%s\n' "$1" | sed -n "s/.* types=\([^ ]*\).*/\1/p" | tr ',' '\n' | sed -n "s/^$2://p")
    echo "${_n:-0}"
}

# ---- a stop counts every test once -------------------------------------------------------------
# The command's TERM handler prints many test results and sends --mark records; the stop's
# checkpoints, the stop signal and the end must together record each of them exactly once, in the
# profile (as the front-end loads it) and in the JUnit report. The handler also counts its runs:
# a stop signal delivered twice runs a shell's trap twice. Several runs, as the second delivery
# is a race the command may win or lose.
N=2000 M=20
cat >"$T/stop.sh" <<EOS
results() {
    echo run >>"\$0.runs"
    i=0
    while [ \$i -lt $N ]; do
        echo "{\"action\":\"test_start\",\"test\":\"t\$i\"}"
        echo "{\"action\":\"test_end\",\"test\":\"t\$i\",\"status\":\"PASS\"}"
        i=\$((i + 1))
    done
    i=0
    while [ \$i -lt $M ]; do
        "$RESMON_RUN" --mark event "m\$i"
        i=\$((i + 1))
    done
}
trap 'results; exit 1' TERM
echo '{"action":"test_start","test":"first"}'
echo '{"action":"test_end","test":"first","status":"PASS"}'
echo "ready \$\$" >"\$HELPER_EVENTS"
"$HELPER" sleep 300 &
wait \$!
EOS
run=1
while [ $run -le 8 ]; do
    rm -f "$T/stop.sh.runs"
    alarmed "$RESMON_RUN" -q -i 0 -t 1h -o "$T/stop$run.json" --junit="$T/stop$run.xml" -- sh "$T/stop.sh"
    expect "stop $run: status" $? 124
    expect "stop $run: the TERM handler ran" "$(wc -l <"$T/stop.sh.runs")" 1
    expect "stop $run: results printed" "$(grep -c '"test_end"' "$T/alarmed.out")" $((N + 1))
    facts=$(frontend "$T/stop$run.json") || fail "stop $run: the front-end does not load the profile"
    expect "stop $run: tests in the profile" "$(type_count "$facts" Test)" $((N + 1))
    expect "stop $run: marks in the profile" "$(type_count "$facts" Text)" $M
    expect "stop $run: tests in the JUnit report" "$(qn "$T/stop$run.xml" //testcase)" $((N + 1))
    run=$((run + 1))
done
echo "stop: $((N + 1)) tests and $M marks, each once, in 8 stopped runs"

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

# ---- no control character reaches any sink raw --------------------------------------------------
# Test ids holding ESC sequences, BEL, U+009B (CSI as a C1 control), a raw 0x9B byte, a lone CR
# followed by a Markdown heading, and a message holding the same; they fail in one run and pass in
# the other, so the summary, the annotations, the job summary and --compare all name them.
# inert FILE WHAT: FILE holds no control byte but LF, no C1 control, and is valid UTF-8.
inert() {
    LC_ALL=C tr -d '\n' <"$1" | LC_ALL=C grep -q '[[:cntrl:]]' && fail "$2: a control character: $(od -c "$1" | head -20)"
    LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$1" && fail "$2: a C1 control (U+0080-U+009F)"
    iconv -f UTF-8 -t UTF-8 <"$1" >/dev/null 2>&1 || fail "$2: not UTF-8 (a raw 0x9B byte?)"
    return 0
}
hostile_script() { # hostile_script FILE STATUS
    {
        printf '%s\n' '{"action":"test_start","test":"esc\u001b[31mred\u0007bel\u009b2Jc1"}'
        printf '%s\n' "{\"action\":\"test_end\",\"test\":\"esc\\u001b[31mred\\u0007bel\\u009b2Jc1\",\"status\":\"$2\",\"expected\":\"PASS\",\"message\":\"m\\u001b]0;title\\u0007\\u009bx\"}"
        printf '%s\n' '{"action":"test_start","test":"cr\r## INJECTED"}'
        printf '%s\n' "{\"action\":\"test_end\",\"test\":\"cr\\r## INJECTED\",\"status\":\"$2\",\"expected\":\"PASS\"}"
        printf '{"action":"test_start","test":"raw\2332J"}\n'
        printf '{"action":"test_end","test":"raw\2332J","status":"%s","expected":"PASS"}\n' "$2"
    } >"$1.log"
    echo "cat '$1.log'" >"$1"
}
hostile_script "$T/good.sh" PASS
hostile_script "$T/bad.sh" FAIL
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/good.json" -- sh "$T/good.sh" >/dev/null
# summary, annotations, job summary (the run's stderr holds only resmon-run's text)
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/bad.md" NO_COLOR=1 \
    "$RESMON_RUN" -i 0 -o "$T/bad.json" -- sh "$T/bad.sh" >/dev/null 2>"$T/bad.err"
grep -q '^::error title=FAIL esc?\[31mred?bel?2Jc1::esc?\[31mred?bel?2Jc1: FAIL' "$T/bad.err" ||
    fail "no annotation of the test with its control characters replaced: $(cat -A "$T/bad.err")"
# (the name the stream, JUnit's report and the summary give it: the byte that is no UTF-8 is U+FFFD)
grep -q "^::error title=FAIL raw$(printf '\357\277\275')2J::" "$T/bad.err" ||
    fail "no annotation of the test with a raw 0x9B byte: $(grep '^::' "$T/bad.err" | cat -A)"
grep -q '^  unexpected   FAIL     esc?\[31mred?bel?2Jc1' "$T/bad.err" || fail "the summary does not name the test"
inert "$T/bad.err" "stderr (summary and annotations)"
inert "$T/bad.md" "the job summary"
grep -q '^## INJECTED' "$T/bad.md" && fail "the job summary: a test id made a heading"
grep -q 'cr?## INJECTED' "$T/bad.md" || fail "the job summary does not name the test with a CR"
# --compare, as text and as Markdown
expect_status 1 "$RESMON_RUN" --compare "$T/good.json" "$T/bad.json" >"$T/cmp.txt"
inert "$T/cmp.txt" "--compare"
grep -q '^  esc?\[31mred?bel?2Jc1  PASS -> FAIL$' "$T/cmp.txt" || fail "--compare does not name the test: $(cat -A "$T/cmp.txt")"
expect_status 1 "$RESMON_RUN" --compare --markdown "$T/good.json" "$T/bad.json" >"$T/cmp.md"
inert "$T/cmp.md" "--compare --markdown"
grep -q '^## INJECTED' "$T/cmp.md" && fail "--compare --markdown: a test id made a heading: $(cat -A "$T/cmp.md")"
grep -q '^| cr ## INJECTED | PASS | FAIL |$' "$T/cmp.md" || fail "--compare --markdown: no row of the test with a CR"
echo "control characters: none raw in the summary, the annotations, the job summary and --compare"

# ---- an annotation's title is cut between characters ----------------------------------------------
# "FAIL " and 121 bytes of id, then a three-byte character across the title's 128-byte bound.
long=$(printf '%0121d' 0 | tr 0 a)
cat >"$T/long.sh" <<EOS
echo '{"action":"test_start","test":"$long漢字"}'
echo '{"action":"test_end","test":"$long漢字","status":"FAIL","expected":"PASS"}'
EOS
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/long.md" "$RESMON_RUN" -q -i 0 -o "$T/long.json" \
    -- sh "$T/long.sh" >/dev/null 2>"$T/long.err"
grep '^::error' "$T/long.err" >"$T/long.ann"
iconv -f UTF-8 -t UTF-8 <"$T/long.ann" >/dev/null 2>&1 || fail "an annotation cut inside a character: $(od -c "$T/long.ann" | sed -n 8,10p)"
grep -q "^::error title=FAIL $long::$long漢字: FAIL" "$T/long.ann" || fail "the annotation's title: $(cat "$T/long.ann")"
echo "annotation: a title cut at its bound stays UTF-8"

# ---- --no-profile: the summary still counts the tests -------------------------------------------
cat >"$T/np.sh" <<EOS
echo '{"action":"test_start","test":"d/pass.js"}'
echo '{"action":"test_end","test":"d/pass.js","status":"PASS"}'
echo '{"action":"test_start","test":"d/fail.js"}'
echo '{"action":"test_end","test":"d/fail.js","status":"FAIL","expected":"PASS"}'
EOS
expect_status 0 env NO_COLOR=1 "$RESMON_RUN" --no-profile -i 0 -- sh "$T/np.sh" >"$T/np.out" 2>"$T/np.err"
grep -q '^  tests        2: 1 PASS, 1 FAIL (1 unexpected)$' "$T/np.err" || fail "--no-profile: no tests in the summary: $(cat "$T/np.err")"
grep -q '^  unexpected   FAIL     d/fail.js$' "$T/np.err" || fail "--no-profile: the failure is not named"
expect "--no-profile: output passed through" "$(grep -c action "$T/np.out")" 4
[ -z "$(find "$T" -name 'np*.json')" ] || fail "--no-profile wrote a file"
echo "--no-profile: the summary counts the tests"

# ---- --recover writes strict JSON: no lone surrogate from a stream ------------------------------
# The stream a killed run left, with lines that escape lone surrogates appended: in a marker's
# payload, a late message, a test still open. A pair and an escaped backslash before "ud800" are
# not lone surrogates, and stay.
cat >"$T/hang.sh" <<EOS
echo '{"action":"test_start","test":"dir/hangs.js"}'
exec "$HELPER" sleep 300
EOS
"$RESMON_RUN" -q -i 0 -o "$T/killed.json" -- sh "$T/hang.sh" >/dev/null 2>&1 &
sup=$!
stream_shows "$T/killed.json" '"kind":"test","key":"dir/hangs.js"'
kill -KILL $sup
{ wait $sup; } 2>/dev/null # killed: the shell would say so
cat >>"$T/killed.json" <<'EOS'
{"type":"marker","name":"test","startTime":40.0,"endTime":41.0,"data":{"type":"Test","test":"dir/lone\ud800.js","name":"lone\ud800.js \ud83d\ude00 \\ud800","status":"FAIL","expected":"PASS","color":"orange"},"category":2}
{"type":"message","test":"dir/lone\ud800.js","message":"a low one \udc00 alone"}
{"type":"marker","name":"Phase","startTime":40.0,"endTime":41.0,"data":{"type":"Phase","phase":"p\udbff","cpuTime":1.0},"category":2}
{"type":"open","kind":"test","key":"dir/open\udc00.js","name":"test","startTime":42.0,"category":2,"data":{"type":"Test","test":"dir/open\udc00.js","name":"open\udc00.js"}}
EOS
expect_status 0 "$RESMON_RUN" --recover "$T/killed.json" -o "$T/recovered.json" 2>/dev/null
node -e '
const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const bad = [], seen = {};
(function walk(v) {
  if (typeof v === "string") { if (lone.test(v)) bad.push(JSON.stringify(v)); seen[v] = 1; }
  else if (v && typeof v === "object") for (const k in v) walk(v[k]);
})(p);
if (bad.length) { console.error("lone surrogates: " + bad.join(" ")); process.exit(1); }
for (const want of ["dir/lone\ufffd.js", "lone\ufffd.js \u{1f600} \\ud800", "a low one \ufffd alone", "p\ufffd", "dir/open\ufffd.js"])
  if (!seen[want]) { console.error("missing: " + JSON.stringify(want)); process.exit(1); }
' "$T/recovered.json" || fail "--recover: the profile is not strict JSON"
facts=$(frontend "$T/recovered.json") || fail "--recover: the front-end does not load the profile"
expect "--recover: tests" "$(type_count "$facts" Test)" 3
echo "--recover: lone surrogates become U+FFFD, a pair and an escaped backslash stay"

# ---- the dump's text file is safe to cat ----------------------------------------------------------
# A process whose command line holds ESC sequences, BEL, CR, U+009B and a raw 0x9B byte, alive at a
# timeout: FILE.stacks.txt names it with those replaced, and keeps its own lines and columns.
evil=$(printf 'evil\033[2J\007\r\302\233x\233y')
"$RESMON_RUN" -q -t 0.5 -o "$T/dumped.json" -- bash -c 'exec -a "$1" "$0" sleep 30' "$HELPER" "$evil" >/dev/null 2>&1
[ -s "$T/dumped.json.stacks.txt" ] || fail "no dump text beside the profile"
LC_ALL=C tr -d '\n\t' <"$T/dumped.json.stacks.txt" >"$T/stacks.flat"
inert "$T/stacks.flat" "the dump's text file"
grep -q 'evil?\[2J???x?y' "$T/dumped.json.stacks.txt" ||
    fail "the dump's text does not name the process: $(cat -A "$T/dumped.json.stacks.txt" | head -20)"
[ "$(wc -l <"$T/dumped.json.stacks.txt")" -gt 2 ] || fail "the dump's text lost its lines"
profile_ok "$T/dumped.json" || fail "the dumped run's profile"
echo "the dump's text: control characters of a command line replaced, its lines kept"

#!/bin/sh
# --otlp: the run as OTLP/JSON lines (the otlpjsonfile receiver's format), held to the OTLP
# protobuf definitions by tests/otlp-check.cjs, on a normal run, a timeout (written before the
# first stop signal, and the same ids when rewritten), a limit, and a killed-then-recovered run.
. "$TOP_SRCDIR/tests/lib.sh"
command -v node >/dev/null 2>&1 || skip "node is not installed (the OTLP checker runs on it)"
OCHECK="$TOP_SRCDIR/tests/otlp-check.cjs"

# facts FILE: the checker's line of facts; fails when FILE is not valid OTLP/JSON.
facts() { node "$OCHECK" "$1" || fail "$1: not valid OTLP/JSON"; }
# attr FACTS SPAN KEY: an attribute of the span named SPAN ('' when it has none).
attr() {
    printf '%s' "$1" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const f=JSON.parse(s);
        const a=(f.attrs[process.argv[1]]||{})[process.argv[2]];console.log(a===undefined?"":a)})' "$2" "$3"
}
# fact FACTS KEY: a top-level fact.
fact() {
    printf '%s' "$1" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
        const v=JSON.parse(s)[process.argv[1]];console.log(Array.isArray(v)?v.join(","):v)})' "$2"
}
expect() { [ "$2" = "$3" ] || fail "$1: '$2', expected '$3'"; }

# ---- a normal run in a (fake) GitHub Actions job ---------------------------------------------
cat >"$T/suite.sh" <<EOS
echo '{"action":"test_start","test":"dir/passes.js"}'
"$HELPER" burn 0.3
echo '{"action":"test_end","test":"dir/passes.js","status":"PASS"}'
echo '{"action":"test_start","test":"dir/fails.js"}'
echo '{"action":"test_end","test":"dir/fails.js","status":"FAIL","expected":"PASS","message":"boom"}'
echo '{"action":"test_start","test":"dir/skipped.js"}'
echo '{"action":"test_end","test":"dir/skipped.js","status":"SKIP","message":"needs a GPU"}'
exit 1
EOS
expect_status 1 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY= GITHUB_SERVER_URL=https://github.com GITHUB_REPOSITORY=o/r \
    GITHUB_SHA=0123abc GITHUB_RUN_ID=77 GITHUB_RUN_ATTEMPT=1 RUNNER_NAME=runner-3 \
    "$RESMON_RUN" -q --ci=none -i 0.05 -o "$T/p.json" --otlp="$T/normal.jsonl" -- sh "$T/suite.sh" >/dev/null
F=$(facts "$T/normal.jsonl")
expect "lines" "$(fact "$F" lines)" 2
expect "spans" "$(fact "$F" spans)" 4
expect "run result" "$(attr "$F" "resmon-run sh" cicd.pipeline.result)" failure
expect "run exit code" "$(attr "$F" "resmon-run sh" process.exit.code)" 1
expect "run status" "$(attr "$F" "resmon-run sh" status.code)" 2
expect "pass" "$(attr "$F" dir/passes.js test.case.result.status)" pass
expect "pass status" "$(attr "$F" dir/passes.js status.code)" 1
expect "fail" "$(attr "$F" dir/fails.js test.case.result.status)" fail
expect "fail message" "$(attr "$F" dir/fails.js status.message)" "FAIL, expected PASS: boom"
expect "skip: no result status" "$(attr "$F" dir/skipped.js test.case.result.status)" ""
expect "skip reason" "$(attr "$F" dir/skipped.js resmon.test.message)" "needs a GPU"
expect "fail: its message" "$(attr "$F" dir/fails.js resmon.test.message)" "boom"
expect "pass: no message" "$(attr "$F" dir/passes.js resmon.test.message)" ""
expect "suite" "$(attr "$F" dir/passes.js test.suite.name)" dir
run_id=$(attr "$F" "resmon-run sh" parent)
expect "the run is the root" "$run_id" ""
case "$(attr "$F" dir/passes.js resmon.test.max_rss)" in [1-9]*) ;; *) fail "no max_rss" ;; esac
case "$(attr "$F" dir/passes.js resmon.test.cpu_time)" in 0.[0-9]*|[1-9]*) ;; *) fail "no cpu_time" ;; esac
names=$(fact "$F" names)
for m in resmon.tree.cpu.time resmon.tree.memory.rss system.cpu.utilization system.memory.usage; do
    case ",$names," in *",$m,"*) ;; *) fail "no metric $m ($names)" ;; esac
done
[ "$(fact "$F" points)" -ge 4 ] || fail "$(fact "$F" points) points"
# The resource names the CI job.
grep -q '{"key":"cicd.pipeline.run.url.full","value":{"stringValue":"https://github.com/o/r/actions/runs/77/attempts/1"}}' \
    "$T/normal.jsonl" || fail "no job URL in the resource"
grep -q '{"key":"vcs.ref.head.revision","value":{"stringValue":"0123abc"}}' "$T/normal.jsonl" || fail "no revision"
echo "normal run: valid OTLP/JSON, 4 spans, 4 metrics"

# ---- an OTLP decoder's reading: the official protobuf definitions, by protobufjs ------------
# (lib.sh runs it on every OTLP file a test leaves; here it reads what the checker reads, and
# refuses what a consumer would not read as meant.)
if otlp_decoder_available; then
    D=$(otlp_decode "$T/normal.jsonl") || fail "the OTLP decoder refuses the normal run's file"
    expect "decoded lines" "$(fact "$D" lines)" 2
    expect "decoded spans" "$(fact "$D" spans)" 4
    expect "decoded points" "$(fact "$D" points)" "$(fact "$F" points)"
    mkdir -p "$T/raw"
    bad() {
        sed "$1" "$T/normal.jsonl" >"$T/raw/bad.jsonl"
        ! cmp -s "$T/raw/bad.jsonl" "$T/normal.jsonl" || fail "decoder: '$1' changed nothing"
        ! otlp_decode "$T/raw/bad.jsonl" >/dev/null 2>"$T/raw/bad.err" || fail "the decoder took $2"
        grep -q "$3" "$T/raw/bad.err" || fail "decoder on $2: $(cat "$T/raw/bad.err")"
    }
    bad 's/"kind":1/"kind":"SPAN_KIND_INTERNAL"/' "an enum by name" "kind: a value of enum SpanKind as an integer expected"
    bad 's/"spans":\[{/"spans":[{"spanKind":1,/' "an unknown field" "spanKind: unknown field of opentelemetry.proto.trace.v1.Span"
    bad 's/"traceId":"\([0-9a-f]*\)"/"traceId":"\1ff"/' "a long trace id" "traceId: 16 bytes in lowercase hex expected"
    bad 's/"startTimeUnixNano":"\([0-9]*\)"/"startTimeUnixNano":"\1.5"/' "a fraction of a nanosecond" "startTimeUnixNano: fixed64 expected"
    echo "decoder: the file decodes as OTLP; an enum by name, an unknown field, a bad id or time do not"
else
    echo "SKIP: decoding with the OTLP protobuf definitions ($OTLP_MODULES missing: scripts/setup installs them)"
fi

# ---- a timeout, written before the first stop signal ----------------------------------------
# The command copies the file it finds at TERM; the run times out (SIGALRM, as at --timeout).
mkdir -p "$T/raw"
cat >"$T/hang.sh" <<EOS
trap 'cp "$T/timeout.jsonl" "$T/raw/at-term.jsonl"; exit 1' TERM
echo \$\$ >"$T/hang.pid"
echo '{"action":"test_start","test":"dir/quick.js"}'
echo '{"action":"test_end","test":"dir/quick.js","status":"PASS"}'
echo '{"action":"test_start","test":"dir/hangs.js"}'
"$HELPER" sleep 300 &
wait \$!
EOS
"$RESMON_RUN" -q -i 0 -o "$T/timeout.json" --timeout=1h --otlp="$T/timeout.jsonl" -- sh "$T/hang.sh" >/dev/null 2>&1 &
sup=$!
stream_shows "$T/timeout.json" '"kind":"test","key":"dir/hangs.js"'
kill -ALRM $sup
wait $sup
expect "timeout status" $? 124
[ -f "$T/raw/at-term.jsonl" ] || fail "no OTLP file when the command got TERM"
A=$(facts "$T/raw/at-term.jsonl")
F=$(facts "$T/timeout.jsonl")
for f in "$A" "$F"; do
    expect "timed-out test" "$(attr "$f" dir/hangs.js status.message)" \
        "still running when the run timed out after 3600 s (--timeout)"
    expect "timed-out test status" "$(attr "$f" dir/hangs.js resmon.test.status)" TIMEOUT
    expect "run result" "$(attr "$f" "resmon-run sh" cicd.pipeline.result)" timeout
    expect "run timeout" "$(attr "$f" "resmon-run sh" resmon.timeout)" 3600
done
expect "same span ids at the stop and at the end" "$(attr "$A" dir/hangs.js parent)" "$(attr "$F" dir/hangs.js parent)"
echo "timeout: written before TERM, the hung test names the timeout"

# ---- a limit: the reason in the run span, and in the JUnit report -----------------------------
expect_status 124 "$RESMON_RUN" -q -i 0.05 -o "$T/limit.json" --cpu-limit=0.2 --otlp="$T/limit.jsonl" \
    --junit="$T/limit.xml" -- "$HELPER" burn 30
F=$(facts "$T/limit.jsonl")
expect "limit reason" "$(attr "$F" "resmon-run helper" resmon.reason)" cpu
case "$(attr "$F" "resmon-run helper" resmon.limit)" in *CPU*) ;; *) fail "limit: $(attr "$F" "resmon-run helper" resmon.limit)" ;; esac
if command -v xmllint >/dev/null 2>&1; then
    expect "JUnit limit reason" "$(xmllint --xpath 'string(//property[@name="resmon.reason"]/@value)' "$T/limit.xml")" cpu
    case "$(xmllint --xpath 'string(//testcase/error/@message)' "$T/limit.xml")" in
    *"the run reached its CPU time limit (--cpu-limit): "*) ;; *) fail "JUnit limit message: $(xmllint --xpath 'string(//testcase/error/@message)' "$T/limit.xml")" ;;
    esac
fi
echo "limit: cpu, in both"

# ---- a command that dies of a signal nobody sent: a failure, not a cancellation ----------------
# (the command marker's reason "signal" is the command's own death; a stop request is the
# timeout marker's "signal")
for sig in SEGV KILL; do
    "$RESMON_RUN" -q -i 0 -o "$T/crash.json" --otlp="$T/crash.jsonl" -- sh -c "kill -$sig \$\$" >/dev/null 2>&1
    st=$?
    [ $st -gt 128 ] || fail "crash $sig: resmon-run exited $st"
    F=$(facts "$T/crash.jsonl")
    expect "crash $sig: reason" "$(attr "$F" "resmon-run sh" resmon.reason)" signal
    expect "crash $sig: result" "$(attr "$F" "resmon-run sh" cicd.pipeline.result)" failure
done
# a stop request (TERM to resmon-run) is the cancellation
"$RESMON_RUN" -q -i 0 -o "$T/req.json" --otlp="$T/req.jsonl" -- sh -c 'kill -TERM $PPID; exec sleep 300' >/dev/null 2>&1
F=$(facts "$T/req.jsonl")
expect "stop request: reason" "$(attr "$F" "resmon-run sh" resmon.reason)" signal
expect "stop request: result" "$(attr "$F" "resmon-run sh" cicd.pipeline.result)" cancellation
echo "a command's own crash: failure; a stop request: cancellation"

# ---- resmon-run killed, then recovered ------------------------------------------------------
cat >"$T/hang2.sh" <<EOS
echo \$\$ >"$T/hang2.pid"
echo '{"action":"test_start","test":"dir/hangs.js"}'
exec "$HELPER" sleep 300
EOS
"$RESMON_RUN" -q -i 0 -o "$T/killed.json" --otlp="$T/raw/never.jsonl" -- sh "$T/hang2.sh" >/dev/null 2>&1 &
sup=$!
stream_shows "$T/killed.json" '"kind":"test","key":"dir/hangs.js"'
kill -KILL $sup
wait $sup 2>/dev/null
kill -KILL "$(cat "$T/hang2.pid")"
"$RESMON_RUN" --recover="$T/killed.json" -o "$T/recovered.json" --otlp="$T/recovered.jsonl" 2>"$T/recover.err" ||
    fail "recover: $(cat "$T/recover.err")"
grep -q "wrote the OpenTelemetry file '$T/recovered.jsonl'" "$T/recover.err" || fail "recover said: $(cat "$T/recover.err")"
F=$(facts "$T/recovered.jsonl")
expect "recovered test" "$(attr "$F" dir/hangs.js resmon.test.status)" INCOMPLETE
expect "recovered run" "$(attr "$F" "resmon-run sh" cicd.pipeline.result)" error
echo "killed run: recovered"

# ---- go modules: the package is the suite, a subtest a child of its parent (real go output) ----
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/gomod.json" --otlp="$T/gomod.jsonl" -- \
    cat "$TOP_SRCDIR/tests/fixtures/real/go/module.json.log" >/dev/null
F=$(facts "$T/gomod.jsonl")
P=example.com/acme/widget
expect "go suite" "$(attr "$F" $P/calc/TestDiv test.suite.name)" $P/calc
expect "go subtest's suite" "$(attr "$F" $P/strutil/TestShoutEmpty/nested/deeper test.suite.name)" $P/strutil
expect "go test's parent" "$(attr "$F" $P/calc/TestAdd parentName)" "resmon-run cat"
expect "go subtest's parent" "$(attr "$F" $P/calc/TestAdd/wrong parentName)" $P/calc/TestAdd
expect "go deep subtest's parent" "$(attr "$F" $P/strutil/TestShoutEmpty/nested/deeper parentName)" \
    $P/strutil/TestShoutEmpty/nested
echo "go modules: suites are packages, subtests under their parents"

# ---- bounded lines: a very large suite, a long run --------------------------------------------
# The Collector's file receiver reads at most 1 MiB of a line by default: every line stays under
# OTLP_LINE_BOUND (src/report/otlp.h, 1 MiB - 64 KiB), a large request goes on over several lines.
bound=$((1024 * 1024 - 64 * 1024))
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/big.json" --otlp="$T/big.jsonl" -- \
    sh -c 'echo 1..20000; seq 1 20000 | sed "s/.*/ok & - a test of a very large suite, number &/"' >/dev/null
F=$(facts "$T/big.jsonl")
expect "large suite spans" "$(fact "$F" spans)" 20001
[ "$(fact "$F" maxLine)" -lt $bound ] || fail "large suite: a line of $(fact "$F" maxLine) bytes"
[ "$(fact "$F" lines)" -gt 3 ] || fail "large suite: $(fact "$F" lines) lines"
echo "large suite: 20000 tests in $(fact "$F" lines) lines of at most $(fact "$F" maxLine) bytes"
# A run of 1800 samples (30 minutes at the default interval of 1 s) at -i 0.01: the command ends
# once the stream holds them. Its metrics take more than one line.
expect_status 0 "$RESMON_RUN" -q -i 0.01 -o "$T/long.json" --otlp="$T/long.jsonl" -- sh -c '
    until [ "$(grep -c "^{\"type\":\"marker\",\"name\":\"Tree CPU\"" "$1")" -ge 1800 ]; do sleep 0.2; done' \
    sh "$T/long.json" >/dev/null
F=$(facts "$T/long.jsonl")
[ "$(fact "$F" points)" -ge 7200 ] || fail "long run: $(fact "$F" points) points"
[ "$(fact "$F" lines)" -ge 3 ] || fail "long run: $(fact "$F" lines) lines (its span and more than one of metrics)"
[ "$(fact "$F" maxLine)" -lt $bound ] || fail "long run: a line of $(fact "$F" maxLine) bytes"
echo "long run: $(fact "$F" points) points in $(fact "$F" lines) lines of at most $(fact "$F" maxLine) bytes"

# --no-profile: the file all the same.
expect_status 0 env TMPDIR="$T" "$RESMON_RUN" -q --no-profile -i 0.05 --otlp="$T/np.jsonl" -- "$HELPER" burn 0.2 >/dev/null
F=$(facts "$T/np.jsonl")
expect "--no-profile spans" "$(fact "$F" spans)" 1
[ "$(fact "$F" points)" -ge 4 ] || fail "--no-profile: $(fact "$F" points) points"
! ls "$T"/resmon-stream.* >/dev/null 2>&1 || fail "--no-profile left its stream"
exit 0

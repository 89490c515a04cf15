#!/bin/sh
# resmon-run --compare OLD NEW: new failures, fixed, slower, fatter, new and gone tests and the
# totals, as text and as Markdown, from full profiles (plain and gzip) and from a killed run's
# stream; exit 1 when there are regressions, 0 when there are none.
. "$TOP_SRCDIR/tests/lib.sh"

cat >"$T/old.sh" <<EOS
echo '{"action":"test_start","test":"d/a.js"}'
echo '{"action":"test_end","test":"d/a.js","status":"PASS"}'
echo '{"action":"test_start","test":"d/b.js"}'
echo '{"action":"test_end","test":"d/b.js","status":"FAIL","expected":"PASS"}'
echo '{"action":"test_start","test":"d/slow.js"}'
"$HELPER" burn 0.01
echo '{"action":"test_end","test":"d/slow.js","status":"PASS"}'
echo '{"action":"test_start","test":"d/fat.js"}'
"$HELPER" alloc 1 0.3
echo '{"action":"test_end","test":"d/fat.js","status":"PASS"}'
echo '{"action":"test_start","test":"d/gone.js"}'
echo '{"action":"test_end","test":"d/gone.js","status":"PASS"}'
EOS
cat >"$T/new.sh" <<EOS
echo '{"action":"test_start","test":"d/a.js"}'
echo '{"action":"test_end","test":"d/a.js","status":"FAIL","expected":"PASS"}'
echo '{"action":"test_start","test":"d/b.js"}'
echo '{"action":"test_end","test":"d/b.js","status":"PASS"}'
echo '{"action":"test_start","test":"d/slow.js"}'
"$HELPER" burn 0.3
echo '{"action":"test_end","test":"d/slow.js","status":"PASS"}'
echo '{"action":"test_start","test":"d/fat.js"}'
"$HELPER" alloc 64 0.3
echo '{"action":"test_end","test":"d/fat.js","status":"PASS"}'
echo '{"action":"test_start","test":"d/new|one.js"}'
echo '{"action":"test_end","test":"d/new|one.js","status":"PASS"}'
EOS
expect_status 0 "$RESMON_RUN" -q -i 0.05 -o "$T/old.json" -- sh "$T/old.sh"
expect_status 0 "$RESMON_RUN" -q -i 0.05 -o "$T/new.json.gz" -- sh "$T/new.sh"

expect_status 1 "$RESMON_RUN" --compare "$T/old.json" "$T/new.json.gz" >"$T/cmp.txt"
cat "$T/cmp.txt"
want() { grep -qx -- "$1" "$T/cmp.txt" || fail "no line '$1'"; }
want "resmon-run: comparing '$T/old.json' (old) with '$T/new.json.gz' (new)"
# (How much slower the fat test is, and how much memory the slow test's helper takes — a
# sanitizer's build takes megabytes more — depend on the machine: what is slower and fatter is
# checked by name below.)
grep -qx "1 new failure, 1 fixed, [12] slower and [12] fatter (past 20%), 1 new, 1 gone" "$T/cmp.txt" || fail "counts"
grep -A1 -x 'New failures (1):' "$T/cmp.txt" | grep -qx '  d/a.js  PASS -> FAIL' || fail "new failures"
grep -A1 -x 'Fixed (1):' "$T/cmp.txt" | grep -qx '  d/b.js  FAIL -> PASS' || fail "fixed"
grep -A2 '^Slower ([12]):$' "$T/cmp.txt" | grep -q '^  d/slow.js  [0-9.]* s -> [0-9.]* s' || fail "slower"
grep -A2 '^Fatter ([12]):$' "$T/cmp.txt" | grep -q '^  d/fat.js  .* -> .*MiB (+[0-9]*%)$' || fail "fatter"
grep -A1 -x 'New tests (1):' "$T/cmp.txt" | grep -qx '  d/new|one.js  - -> PASS' || fail "new"
grep -A1 -x 'Gone (1):' "$T/cmp.txt" | grep -qx '  d/gone.js  PASS -> -' || fail "gone"
grep -q '^tests  *5  *5$' "$T/cmp.txt" || fail "totals: tests"
grep -q '^unexpected  *1  *1$' "$T/cmp.txt" || fail "totals: unexpected"

# Markdown, for a job summary: the same facts in tables, ids escaped.
expect_status 1 "$RESMON_RUN" --compare --markdown "$T/old.json" "$T/new.json.gz" >"$T/cmp.md"
grep -qxF '| d/a.js | PASS | FAIL |' "$T/cmp.md" || fail "markdown new failure"
grep -qxF '| d/new\|one.js | - | PASS |' "$T/cmp.md" || fail "markdown escaping"
grep -q '^| tree CPU | [0-9.]* s | [0-9.]* s |$' "$T/cmp.md" || fail "markdown totals"

# A higher threshold: the slower test (10 ms of CPU before, 300 ms after) stays slower, the
# fatter one (1 MiB before, 64 MiB after) stays fatter; a run compared with itself has nothing.
expect_status 1 "$RESMON_RUN" --compare --threshold=500 "$T/old.json" "$T/new.json.gz" >/dev/null
expect_status 0 "$RESMON_RUN" --compare "$T/new.json.gz" "$T/new.json.gz" >"$T/same.txt"
grep -qx "0 new failures, 0 fixed, 0 slower and 0 fatter (past 20%), 0 new, 0 gone" "$T/same.txt" ||
    fail "self-comparison: $(cat "$T/same.txt")"

# A suite that stopped running (no test at all where there were five) is no pass.
expect_status 0 "$RESMON_RUN" -q -i 0 -o "$T/none.json" -- true
expect_status 1 "$RESMON_RUN" --compare "$T/old.json" "$T/none.json" >"$T/none.txt"
grep -qx "The new run recorded no test (the old one recorded 5): its suite did not run." "$T/none.txt" ||
    fail "every test gone: $(cat "$T/none.txt")"
expect_status 1 "$RESMON_RUN" --compare --markdown "$T/old.json" "$T/none.json" >"$T/none.md"
grep -qxF "**The new run recorded no test** (the old one recorded 5): its suite did not run." "$T/none.md" ||
    fail "every test gone, markdown: $(cat "$T/none.md")"
# ... and neither is there anything to lose in two runs without tests.
expect_status 0 "$RESMON_RUN" --compare "$T/none.json" "$T/none.json" >/dev/null

# A stream a killed run left reads as its profile does. (The command writes its pid before the
# tests, so it is there once the stream shows the last one.)
"$RESMON_RUN" -q -i 0.05 -o "$T/killed.json" -- sh -c "echo \$\$ >'$T/sleeper.pid'; sh '$T/old.sh'; exec '$HELPER' sleep 300" \
    >/dev/null 2>&1 &
sup=$!
stream_shows "$T/killed.json" '"test":"d/gone.js","name":"gone.js","status":"PASS"'
kill -KILL $sup
wait $sup 2>/dev/null
kill -KILL "$(cat "$T/sleeper.pid")"
expect_status 1 "$RESMON_RUN" --compare "$T/killed.json" "$T/new.json.gz" >"$T/stream.txt"
grep -qx "1 new failure, 1 fixed, [12] slower and [12] fatter (past 20%), 1 new, 1 gone" "$T/stream.txt" ||
    fail "from a stream: $(cat "$T/stream.txt")"

# A profile with tests on two threads (as a profile of several processes or workers has): every
# thread holding tests is read. The old run's profile, its last three tests moved to a second
# thread (every column of the marker table split alike). No profile resmon-run writes looks so
# (check-profile would refuse it: it is kept in raw/), but the front-end loads it.
if command -v node >/dev/null 2>&1; then
    mkdir -p "$T/raw"
    node -e '
const fs = require("fs");
const p = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const t0 = p.threads[0], t1 = JSON.parse(JSON.stringify(t0));
const name = (t, i) => t.stringArray[t.markers.name[i]];
const moved = (t, i) => name(t, i) === "test" && /^d\/(slow|fat|gone)\.js$/.test(t.markers.data[i].test);
const keep = (t, pred) => {
    const m = t.markers, idx = [...Array(m.length).keys()].filter((i) => pred(t, i));
    for (const k of Object.keys(m)) if (Array.isArray(m[k])) m[k] = idx.map((i) => m[k][i]);
    m.length = idx.length;
};
keep(t0, (t, i) => !moved(t, i));
keep(t1, moved);
if (t1.markers.length !== 3) throw new Error("moved " + t1.markers.length + " tests");
Object.assign(t1, {name: "Worker", isMainThread: false, tid: t0.tid + 1});
p.threads.push(t1);
fs.writeFileSync(process.argv[2], JSON.stringify(p));
' "$T/old.json" "$T/raw/two.json" || fail "making the two-thread profile"
    if frontend_available; then frontend "$T/raw/two.json" | grep -q ' threads=resmon-run|.*Worker' || fail "two threads: the front-end"; fi
    expect_status 0 "$RESMON_RUN" --compare "$T/old.json" "$T/raw/two.json" >"$T/two.txt"
    grep -qx "0 new failures, 0 fixed, 0 slower and 0 fatter (past 20%), 0 new, 0 gone" "$T/two.txt" ||
        fail "two threads: $(cat "$T/two.txt")"
    grep -q '^tests  *5  *5$' "$T/two.txt" || fail "two threads: tests"
    expect_status 1 "$RESMON_RUN" --compare "$T/raw/two.json" "$T/new.json.gz" >"$T/two-new.txt"
    grep -qx "1 new failure, 1 fixed, [12] slower and [12] fatter (past 20%), 1 new, 1 gone" "$T/two-new.txt" ||
        fail "two threads against new: $(cat "$T/two-new.txt")"
    echo "two threads: every test read"
else
    echo "SKIP: two threads (node is not installed to make the profile)"
fi

# A run shorter than one sampling interval has no memory figure: it is unknown ("-"), not 0 B, in
# the comparison as in the summary, which then shows no memory row at all.
"$RESMON_RUN" -i 60 -o "$T/short.json" -- true 2>"$T/short.err" || fail "short run failed"
! grep -q 'peak 0 B' "$T/short.err" || fail "short run: a peak of 0 B: $(cat "$T/short.err")"
expect_status 0 "$RESMON_RUN" --compare "$T/short.json" "$T/short.json" >"$T/short.txt"
grep -Eq '^peak memory +- +-$' "$T/short.txt" || fail "short run: $(grep peak "$T/short.txt")"
echo "a run shorter than one interval: peak memory unknown, not 0 B"

# Usage.
expect_status 125 "$RESMON_RUN" --compare "$T/old.json" 2>"$T/u1"
grep -q "two runs" "$T/u1" || fail "usage: $(cat "$T/u1")"
expect_status 125 "$RESMON_RUN" --markdown -- true 2>/dev/null
expect_status 125 "$RESMON_RUN" --compare --threshold=abc "$T/old.json" "$T/old.json" 2>/dev/null
printf 'not a run\n' >"$T/raw.txt"
expect_status 125 "$RESMON_RUN" --compare "$T/raw.txt" "$T/old.json" 2>"$T/u2"
grep -q "is neither a profile stream nor a profile" "$T/u2" || fail "not a run: $(cat "$T/u2")"
exit 0

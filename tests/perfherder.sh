#!/bin/sh
# Perfherder data under MOZ_AUTOMATION: $MOZ_UPLOAD_DIR/perfherder-data-resource-usage.json and
# the PERFHERDER_DATA line, in mozharness's shape (framework job_resource_usage, a NAME.overall
# suite with mozharness's subtests in its order, CPU and I/O, then the tree's; one suite per phase
# the command marked), with figures that match the run: the I/O is the profile's IO and Tree IO
# markers summed, and 4 MiB written and fsynced by the command are in it where the build
# directory is on a disk.
. "$TOP_SRCDIR/tests/lib.sh"
command -v node >/dev/null 2>&1 || skip "node is not installed (the checks read the JSON with it)"

# 4 MiB to a real disk, where there is one to write to (as tests/io-accounting.sh)
f=""
fs=$(stat -f -c %T "$TOP_BUILDDIR" 2>/dev/null)
case "$fs" in tmpfs | ramfs | overlayfs) ;; *) [ -r /proc/self/io ] && f="$TOP_BUILDDIR/tests/perfherder.$$" ;; esac
cat >"$T/phases.sh" <<EOS
"$RESMON_RUN" --mark phase-begin build
"$HELPER" burn 0.4
${f:+"$HELPER" writefile 4194304 "$f"}
"$RESMON_RUN" --mark phase-end build
"$RESMON_RUN" --mark phase-begin tests
"$HELPER" burn 0.2
"$RESMON_RUN" --mark phase-end tests
EOS
mkdir "$T/up"
expect_status 0 env MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$T/up" "$RESMON_RUN" -q -i 0.05 --product=mochitest -- sh "$T/phases.sh" \
    >/dev/null 2>"$T/err"
[ -n "$f" ] && rm -f "$f"
P=$T/up/perfherder-data-resource-usage.json
[ -f "$P" ] || fail "no $P"
# The logged line is the file.
grep -c '^PERFHERDER_DATA: ' "$T/err" | grep -qx 1 || fail "not one PERFHERDER_DATA line: $(cat "$T/err")"
[ "$(sed -n 's/^PERFHERDER_DATA: //p' "$T/err")" = "$(cat "$P")" ] || fail "the line and the file differ"
# The shape Perfherder's performance-artifact schema takes, and the figures.
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const fail = (m) => { console.error("FAIL: " + m); process.exit(1); };
const keys = (o, allowed, what) => Object.keys(o).forEach((k) => allowed.includes(k) || fail(what + ": unknown key " + k));
keys(d, ["framework", "suites"], "data");
if (d.framework.name !== "job_resource_usage") fail("framework " + JSON.stringify(d.framework));
if (!Array.isArray(d.suites) || !d.suites.length) fail("no suites");
const names = new Set();
for (const s of d.suites) {
    keys(s, ["name", "extraOptions", "subtests"], "suite");
    if (typeof s.name !== "string" || names.has(s.name)) fail("suite name " + s.name);
    names.add(s.name);
    if (s.extraOptions && !s.extraOptions.every((o) => typeof o === "string")) fail("extraOptions");
    for (const t of s.subtests) {
        keys(t, ["name", "value"], "subtest");
        if (typeof t.name !== "string" || typeof t.value !== "number" || !isFinite(t.value)) fail("subtest " + JSON.stringify(t));
    }
}
const suite = (n) => d.suites.find((s) => s.name === n) || fail("no suite " + n);
const val = (s, n) => { const t = suite(s).subtests.find((x) => x.name === n); if (!t) fail(s + " has no " + n); return t.value; };
if (d.suites.map((s) => s.name).join() !== "mochitest.overall,mochitest.build,mochitest.tests") fail("suites " + [...names]);
const cpu = val("mochitest.overall", "tree_cpu_time");
if (cpu < 0.6 || cpu > 5) fail("tree_cpu_time " + cpu);
if (val("mochitest.overall", "tree_max_rss") <= 0) fail("tree_max_rss");
// the subtests of mozharness, in its order, then those of the tree
const order = suite("mochitest.overall").subtests.map((t) => t.name).join();
if (order !== "cpu_percent,io_write_bytes,io.read_bytes,io_write_time,io_read_time," +
    "tree_cpu_time,tree_max_rss,tree_io_write_bytes,tree_io_read_bytes") fail("overall subtests " + order);
// the I/O figures are the markers of the profile, summed
const prof = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")), th = prof.threads[0];
const sum = (marker, field) => th.markers.data.reduce((a, d, i) =>
    a + (th.stringArray[th.markers.name[i]] === marker && d ? d[field] : 0), 0);
const io = [["io_write_bytes", "IO", "write_bytes"], ["io.read_bytes", "IO", "read_bytes"],
            ["io_write_time", "IO", "write_time"], ["io_read_time", "IO", "read_time"],
            ["tree_io_write_bytes", "Tree IO", "write_bytes"], ["tree_io_read_bytes", "Tree IO", "read_bytes"]];
for (const [n, m, k] of io)
    if (val("mochitest.overall", n) !== sum(m, k)) fail(n + " " + val("mochitest.overall", n) + ", the profile says " + sum(m, k));
if (process.argv[3] === "wrote") {
    if (val("mochitest.overall", "tree_io_write_bytes") < 4194304) fail("tree_io_write_bytes below the 4 MiB written");
    if (val("mochitest.overall", "io_write_bytes") < 4194304) fail("io_write_bytes below the 4 MiB written");
}
console.log("I/O: " + io.map(([n]) => n + " " + val("mochitest.overall", n)).join(", "));
const p = val("mochitest.overall", "cpu_percent");
if (p <= 0 || p > 100) fail("cpu_percent " + p);
if (val("mochitest.build", "time") < 0.4) fail("build time " + val("mochitest.build", "time"));
if (val("mochitest.tests", "time") < 0.2) fail("tests time");
val("mochitest.build", "cpu_percent");
' "$P" "$T/up/profile_resource-usage.json" "${f:+wrote}" || fail "the Perfherder data"
echo "perfherder: shape and figures"

# A stop: the file is there before the command gets its TERM.
mkdir -p "$T/raw" "$T/up2"
cat >"$T/hang.sh" <<EOS
trap 'cp "$T/up2/perfherder-data-resource-usage.json" "$T/raw/at-term.json"; exit 1' TERM
echo ready >"$T/ready"
"$HELPER" sleep 300 &
wait \$!
EOS
env MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$T/up2" "$RESMON_RUN" -q -i 0 -- sh "$T/hang.sh" >/dev/null 2>&1 &
sup=$!
stream_shows "$T/up2/profile_resource-usage.json" '"kind":"process"'
new_events
"$HELPER" wait-file "$T/ready" ready &
wait_event "found *" >/dev/null
kill -TERM $sup
wait $sup
[ -s "$T/raw/at-term.json" ] || fail "no Perfherder data when the command got TERM"
grep -q '"framework":{"name":"job_resource_usage"}' "$T/raw/at-term.json" || fail "at TERM: $(cat "$T/raw/at-term.json")"

# A missing MOZ_UPLOAD_DIR is made (with its parents), as mozharness makes it; one that cannot be
# is named.
expect_status 0 env MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$T/missing/up4" "$RESMON_RUN" -q -i 0 -- true 2>/dev/null
[ -f "$T/missing/up4/perfherder-data-resource-usage.json" ] || fail "missing MOZ_UPLOAD_DIR: no Perfherder data"
[ -f "$T/missing/up4/profile_resource-usage.json" ] || fail "missing MOZ_UPLOAD_DIR: no profile"
: >"$T/raw/a-file"
expect_status 125 env MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$T/raw/a-file/up" "$RESMON_RUN" -q -i 0 -- true 2>"$T/err5"
grep -qx "resmon-run: cannot create MOZ_UPLOAD_DIR '$T/raw/a-file/up' (at '$T/raw/a-file/up'): Not a directory" \
    "$T/err5" || fail "MOZ_UPLOAD_DIR that cannot be made: $(cat "$T/err5")"

# The manual says what Treeherder does with it: its ingestion drops the framework.
grep -q "^Treeherder's ingestion drops data of the" "$TOP_SRCDIR/man/resmon-run.1" ||
    fail "the manual does not say that Treeherder's ingestion drops job_resource_usage"

# Killed outright, then recovered: --recover writes the Perfherder data from the stream as the run
# would have, as it rebuilds the other reports (the same list of them); a full profile is no stream
# to build it from, and not an error when only the environment asked for the data. A missing
# MOZ_UPLOAD_DIR is made, as a run makes it.
mkdir -p "$T/up6"
cat >"$T/killed.sh" <<EOS
echo \$\$ >"$T/killed.pid"
"$HELPER" burn 0.3
"$RESMON_RUN" --mark event burnt
exec "$HELPER" sleep 300
EOS
env MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$T/up6" "$RESMON_RUN" -q -i 0.05 --product=reftest -- sh "$T/killed.sh" \
    >/dev/null 2>&1 &
sup=$!
stream_shows "$T/up6/profile_resource-usage.json" '"name":"burnt"'
kill -KILL $sup
wait $sup 2>/dev/null
kill -KILL "$(cat "$T/killed.pid")" 2>/dev/null
rm -f "$T/up6/perfherder-data-resource-usage.json"
expect_status 0 env MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$T/rec/up" "$RESMON_RUN" --recover="$T/up6/profile_resource-usage.json" \
    -o "$T/recovered.json" 2>"$T/err6"
R=$T/rec/up/perfherder-data-resource-usage.json
grep -qx "resmon-run: wrote the Perfherder data '$R'" "$T/err6" || fail "recover said: $(cat "$T/err6")"
node -e '
const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const fail = (m) => { console.error("FAIL: recovered Perfherder data: " + m); process.exit(1); };
if (d.framework.name !== "job_resource_usage") fail("framework " + JSON.stringify(d.framework));
const o = d.suites.find((s) => s.name === "reftest.overall") || fail("no reftest.overall: " + d.suites.map((s) => s.name));
const cpu = o.subtests.find((t) => t.name === "tree_cpu_time") || fail("no tree_cpu_time");
if (!(cpu.value > 0)) fail("tree_cpu_time " + cpu.value);
' "$R" || fail "the recovered Perfherder data"
if frontend_available; then frontend "$T/recovered.json" >/dev/null || fail "the recovered profile"; fi
rm -f "$R"
expect_status 0 env MOZ_AUTOMATION=1 MOZ_UPLOAD_DIR="$T/rec/up" "$RESMON_RUN" --recover="$T/recovered.json" 2>"$T/err7"
[ ! -e "$R" ] || fail "Perfherder data recovered from a full profile"
grep -q "already a full profile" "$T/err7" || fail "recovering a full profile said: $(cat "$T/err7")"
echo "killed run: --recover writes the Perfherder data"

# Without MOZ_AUTOMATION: none.
mkdir "$T/up3"
expect_status 0 env MOZ_AUTOMATION= MOZ_UPLOAD_DIR="$T/up3" "$RESMON_RUN" -q -i 0 -- true 2>"$T/err3"
[ ! -e "$T/up3/perfherder-data-resource-usage.json" ] || fail "Perfherder data without MOZ_AUTOMATION"
! grep -q PERFHERDER_DATA "$T/err3" || fail "PERFHERDER_DATA without MOZ_AUTOMATION"
exit 0

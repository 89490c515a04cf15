# Shared by the end-to-end profile tests (profile-run.sh, sampling-run.sh, testlog-run.sh): queries
# of the profiles resmon-run writes, through tests/check-profile. Source it after lib.sh.
CHECK="$HELPERS/check-profile"
[ -x "$CHECK" ] || fail "no $CHECK"

# markers FILE NAME: the --dump lines (name TAB start TAB end TAB category TAB data) of NAME.
markers() {
    "$CHECK" --dump "$1" | awk -F'\t' -v n="$2" '$1 == n'
}

# count FILE NAME: how many markers are named NAME.
count() {
    "$CHECK" --count "$2" "$1"
}

# meta FILE KEY: meta.KEY.
meta() {
    "$CHECK" --meta "$2" "$1"
}

# val JSON KEY: the value of a top-level member of a flat JSON object (strings without quotes).
val() {
    printf '%s\n' "$1" | sed -n 's/.*"'"$2"'":\("[^"]*"\|[^,}]*\).*/\1/p' | sed 's/^"\(.*\)"$/\1/' | head -n 1
}

# has_key JSON KEY: the object has this member.
has_key() {
    case "$1" in *"\"$2\":"*) return 0 ;; esac
    return 1
}

# sum FILE NAME KEY: the sum of data.KEY over the markers named NAME.
sum() {
    markers "$1" "$2" | cut -f5 | sed -n 's/.*"'"$3"'":\([-0-9.e+]*\).*/\1/p' |
        awk '{ s += $1 } END { printf "%.3f\n", s }'
}

# maxof FILE NAME KEY: the largest data.KEY over the markers named NAME.
maxof() {
    markers "$1" "$2" | cut -f5 | sed -n 's/.*"'"$3"'":\([-0-9.e+]*\).*/\1/p' |
        awk 'BEGIN { m = 0 } { if ($1 > m) m = $1 } END { printf "%.0f\n", m }'
}

# near A B REL ABS: |A - B| <= REL * |B| + ABS.
near() {
    awk -v a="$1" -v b="$2" -v r="$3" -v e="$4" \
        'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= r * m + e) }'
}

# ge A B: A >= B (numbers).
ge() {
    awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'
}

# test_line FILE ID: the --dump line of the test marker of test ID (the last one if several).
test_line() {
    markers "$1" test | grep -F "\"test\":\"$2\"," | tail -n 1
}

# expect_test FILE ID STATUS COLOR [EXPECTED]: the test marker of ID has this status and colour,
# and an "expected" member exactly when EXPECTED is given (then equal to it).
expect_test() {
    _l=$(test_line "$1" "$2")
    [ -n "$_l" ] || fail "$1: no test marker for '$2'"
    _d=$(printf '%s\n' "$_l" | cut -f5)
    [ "$(val "$_d" status)" = "$3" ] || fail "$1: test '$2': status $(val "$_d" status), expected $3: $_d"
    [ "$(val "$_d" color)" = "$4" ] || fail "$1: test '$2': color $(val "$_d" color), expected $4: $_d"
    if [ $# -ge 5 ]; then
        [ "$(val "$_d" expected)" = "$5" ] || fail "$1: test '$2': expected member '$(val "$_d" expected)', want $5"
    else
        has_key "$_d" expected && fail "$1: test '$2': an expected member although the result was as expected: $_d"
    fi
    [ "$(printf '%s\n' "$_l" | cut -f4)" = 2 ] || fail "$1: test '$2': category is not 2"
    return 0
}

# duration LINE: end - start of a --dump line (ms).
duration() {
    printf '%s\n' "$1" | awk -F'\t' '{ printf "%.3f\n", $3 - $2 }'
}

now_ns() { date +%s%N; }

# first_interval FILE WHAT: every counter starts with a zero origin (the front-end draws nothing of
# a counter's first sample), so that what Tree CPU draws, its samples after the first, adds up to
# the tree's CPU time the command marker holds, within 5%.
first_interval() {
    node -e '
const fs = require("fs"), zlib = require("zlib");
let b = fs.readFileSync(process.argv[1]);
if (b[0] === 0x1f) b = zlib.gunzipSync(b);
const p = JSON.parse(b), t = p.threads[0], bad = [];
let cmd = null;
for (let i = 0; i < t.markers.length; i++) if (t.stringArray[t.markers.name[i]] === "command") cmd = t.markers.data[i];
for (const c of p.counters) {
  const s = c.sampleGroups[0].samples;
  if (s.count[0] !== 0) bad.push(`${c.name} starts with ${s.count[0]} at ${s.time[0]} ms, which the front-end does not draw`);
}
const cpu = p.counters.find((c) => c.name === "Tree CPU").sampleGroups[0].samples;
const drawn = cpu.count.slice(1).reduce((a, x) => a + x, 0);
if (!cmd || !(cmd.cpuTime > 0)) bad.push(`no command CPU time: ${JSON.stringify(cmd)}`);
else if (Math.abs(drawn - cmd.cpuTime) > 0.05 * cmd.cpuTime)
  bad.push(`Tree CPU draws ${drawn.toFixed(1)} ms of the ${cmd.cpuTime} ms the tree used`);
if (bad.length) { console.error(bad.join("\n")); process.exit(1); }
' "$1" || fail "$2: a counter loses its first interval"
}

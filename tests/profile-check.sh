#!/bin/sh
# The structural checker and the conversion end to end: mozsystemmonitor's files are accepted,
# converted streams validate, broken files are rejected with a reason, queries answer.
set -u
CHECK="$HELPERS/check-profile"
TOOL="$HELPERS/profile-tool"
FIX="$TOP_SRCDIR/tests/fixtures/moz"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { if "$@" >"$tmp/out" 2>"$tmp/err"; then :; else echo "FAIL (should pass): $*"; cat "$tmp/err"; fails=$((fails + 1)); fi; }
ko() { if "$@" >"$tmp/out" 2>"$tmp/err"; then echo "FAIL (should fail): $*"; fails=$((fails + 1)); else
    [ -s "$tmp/err" ] || { echo "FAIL (no reason given): $*"; fails=$((fails + 1)); }; fi; }
eq() { [ "$1" = "$2" ] || { echo "FAIL: expected '$2', got '$1' ($3)"; fails=$((fails + 1)); }; }

# Upstream's own files.
ok "$CHECK" "$FIX/final-profile.json"
ok "$CHECK" "$FIX/final-profile-with-processes.json"
for s in stream-complete stream-midrun stream-killed; do
    ok "$CHECK" --stream "$FIX/$s.jsonl"
done

# Converted streams validate, keep every marker, and the copy is left alone.
for s in stream-complete stream-midrun stream-killed; do
    cp "$FIX/$s.jsonl" "$tmp/$s.json"
    ok "$TOOL" recover "$tmp/$s.json"
    ok "$CHECK" "$tmp/$s.json"
    want=$(($(wc -l <"$FIX/$s.jsonl") - 2))
    got=$("$CHECK" --dump "$tmp/$s.json" | wc -l)
    eq "$got" "$want" "markers of $s"
    eq "$("$TOOL" detect "$tmp/$s.json")" full "detect $s"
done
ok "$TOOL" recover "$tmp/stream-complete.json"
eq "$(cat "$tmp/out")" "already full" "recover of a full profile"

# Queries, on a stream and on the profile made from it.
for f in "$FIX/stream-complete.jsonl" "$tmp/stream-complete.json"; do
    eq "$("$CHECK" --count "CPU Use" "$f")" 41 "count CPU Use in $f"
    eq "$("$CHECK" --count test "$f")" 3 "count test in $f"
    eq "$("$CHECK" --meta product "$f")" xpcshell "meta product in $f"
    eq "$("$CHECK" --meta logicalCPUs "$f")" 2 "meta logicalCPUs in $f"
    line=$("$CHECK" --dump "$f" | grep '^test	50.152')
    eq "$line" 'test	50.152	1816.152	2	{"type":"Test","test":"dom/tests/unit/test_cpu_burn.js","name":"test_cpu_burn.js","timeoutfactor":2,"status":"PASS","color":"green"}' "dump in $f"
done
"$CHECK" --dump "$FIX/stream-complete.jsonl" | grep -q '^Sampling Interval	139.297	null	0	{"type":"Interval","interval":104}$' ||
    { echo "FAIL: dump of an instant"; fails=$((fails + 1)); }
eq "$("$CHECK" --meta profilingEndTime "$tmp/stream-complete.json")" 4173.391 "profilingEndTime = last timestamp"

# A torn stream: --stream refuses it, --allow-torn accepts it; recovery skips the fragment.
head -c 30000 "$FIX/stream-killed.jsonl" >"$tmp/torn.jsonl"
ko "$CHECK" --stream "$tmp/torn.jsonl"
ok "$CHECK" --stream --allow-torn "$tmp/torn.jsonl"
ok "$TOOL" recover "$tmp/torn.jsonl" "$tmp/torn.json"
ok "$CHECK" "$tmp/torn.json"

# Broken profiles are rejected with a reason.
p="$tmp/stream-complete.json"
sed 's/"phase":\[0,/"phase":[1,/' "$p" >"$tmp/b1.json"; ko "$CHECK" "$tmp/b1.json"
sed 's/"length":217}/"length":216}/' "$p" >"$tmp/b2.json"; ko "$CHECK" "$tmp/b2.json"
sed 's/"pid":"0"/"pid":0/' "$p" >"$tmp/b3.json"; ko "$CHECK" "$tmp/b3.json"
sed 's/,"profilingEndTime":[0-9.]*//' "$p" >"$tmp/b4.json"; ko "$CHECK" "$tmp/b4.json"
sed 's/"category":\[0,/"category":[9,/' "$p" >"$tmp/b5.json"; ko "$CHECK" "$tmp/b5.json"
sed 's/"name":\[1,/"name":[999,/' "$p" >"$tmp/b6.json"; ko "$CHECK" "$tmp/b6.json"
printf '\377' | cat "$p" - >"$tmp/b7.json"; ko "$CHECK" "$tmp/b7.json"
sed 's/"xpcshell"/"xpc\xffshell"/' "$p" >"$tmp/b8.json"; ko "$CHECK" "$tmp/b8.json"
sed '3s/"startTime"/"startTimeX"/' "$FIX/stream-complete.jsonl" >"$tmp/b9.jsonl"; ko "$CHECK" --stream "$tmp/b9.jsonl"
sed '3s/}$/,"category":0}/' "$FIX/stream-complete.jsonl" >"$tmp/b10.jsonl"; ko "$CHECK" --stream "$tmp/b10.jsonl"
tail -n +2 "$FIX/stream-complete.jsonl" >"$tmp/b11.jsonl"; ko "$CHECK" --stream "$tmp/b11.jsonl"
ko "$CHECK" --stream "$p"

# Recovery of something that is neither.
echo hello >"$tmp/other"
ko "$TOOL" recover "$tmp/other"

# A generated stream with open tests: every unclosed test is closed INCOMPLETE.
ok "$TOOL" gen 2000 "$tmp/gen.jsonl"
ok "$CHECK" --stream "$tmp/gen.jsonl"
ok "$TOOL" recover "$tmp/gen.jsonl" "$tmp/gen.json"
ok "$CHECK" "$tmp/gen.json"
[ "$("$CHECK" --dump "$tmp/gen.json" | grep -c '"status":"INCOMPLETE"')" = 1 ] ||
    { echo "FAIL: the open test was not closed INCOMPLETE"; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] || exit 1
exit 0

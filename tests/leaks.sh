#!/bin/sh
# Tests that leave processes behind: at a test's end, the processes that started during it and
# are still alive are on its marker (leaked, leakedCommands) and counted in the summary, which
# also says which test left each process the run ends with.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

# The suite: leaky.js starts a sleep and ends; clean.js starts nothing that outlives it. The
# sleep starts a tick (/proc's clock) after resmon-run has the test's start line (it passed the
# line on, having taken its arrival time before), and the test ends only once two samples have
# followed the sleep's exec (without the process connector, samples are how the tree's processes
# and their command lines are learned).
mkfifo "$T/pass" "$T/go"
cat >"$T/suite.sh" <<EOS
tick() { awk '{ printf "%d", \$1 * 100 }' /proc/uptime; }
samples() { grep -c '"name":"Tree CPU"' "$T/p.json"; }
echo '{"action":"suite_start","source":"s"}'
echo '{"action":"test_start","test":"leaky.js"}'
read go <"$T/go"
t=\$(tick)
until [ "\$(tick)" -gt \$((t + 1)) ]; do :; done
sleep 600 &
echo \$! >"$T/leaker"
# its exec done (its name and its arguments its own), so that the samples below see it whole
until [ "\$(cat /proc/\$!/comm 2>/dev/null)" = sleep ] && [ -n "\$(tr -d '\\0' </proc/\$!/cmdline 2>/dev/null)" ]; do :; done
n=\$(samples)
until [ "\$(samples)" -gt \$((n + 1)) ]; do :; done
echo '{"action":"test_end","test":"leaky.js","status":"PASS"}'
echo '{"action":"test_start","test":"clean.js"}'
"$HELPER" burn 0.01
echo '{"action":"test_end","test":"clean.js","status":"PASS"}'
echo '{"action":"suite_end"}'
EOS
(while IFS= read -r l; do
    printf '%s\n' "$l"
    case $l in *'"test_start","test":"leaky.js"'*) echo go >"$T/go" ;; esac
done <"$T/pass" >"$T/passed") &
reader=$!
NO_COLOR=1 "$RESMON_RUN" -i 0.05 -o "$T/p.json" -- sh "$T/suite.sh" >"$T/pass" 2>"$T/err"
st=$?
wait $reader
[ $st -eq 0 ] || fail "status $st: $(cat "$T/err")"
leaker=$(cat "$T/leaker")
"$CHECK" "$T/p.json" >/dev/null || fail "invalid profile"
leaky=$(markers "$T/p.json" test | grep '"test":"leaky.js"')
case "$leaky" in *'"leaked":1,"leakedCommands":"sleep 600"'*) ;; *) fail "leaky.js: $leaky" ;; esac
clean=$(markers "$T/p.json" test | grep '"test":"clean.js"')
case "$clean" in *leaked*) fail "clean.js: $clean" ;; esac
cat "$T/err"
grep -q "^  leaked  *1 process left running by 1 test" "$T/err" || fail "summary: no leak count"
grep -q "^  left behind  *$leaker  *sleep 600 (left by test leaky.js)\$" "$T/err" || fail "summary: the leftover's test"
! alive "$leaker" || fail "the leftover was not stopped"

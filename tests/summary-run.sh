#!/bin/sh
# The end-of-run summary tells the same story as the profile of the same run, and the command's
# process group gets the terminal when resmon-run holds it.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"

# A known run: three mozlog tests (PASS, unexpected FAIL, SKIP) around a CPU burn.
cat > "$T/suite.sh" <<EOS
echo '{"action":"suite_start","source":"s"}'
echo '{"action":"test_start","test":"dir/passes.js"}'
"$HELPER" burn 0.3
echo '{"action":"test_end","test":"dir/passes.js","status":"PASS"}'
echo '{"action":"test_start","test":"dir/fails.js"}'
echo '{"action":"test_end","test":"dir/fails.js","status":"FAIL","expected":"PASS"}'
echo '{"action":"test_start","test":"dir/skipped.js"}'
echo '{"action":"test_end","test":"dir/skipped.js","status":"SKIP"}'
echo '{"action":"suite_end"}'
exit 3
EOS
LC_ALL=C.UTF-8 NO_COLOR=1 "$RESMON_RUN" -i 0.05 -o "$T/p.json" -- sh "$T/suite.sh" >/dev/null 2>"$T/sum"
st=$?
[ $st -eq 3 ] || fail "status $st"
"$CHECK" "$T/p.json" >/dev/null || fail "invalid profile"
cat "$T/sum"

grep -q "^resmon-run: 'sh' exited with status 3" "$T/sum" || fail "first line"
grep -q "tests        3: 1 PASS, 1 FAIL, 1 SKIP (1 unexpected)" "$T/sum" || fail "test counts"
grep -q "unexpected   FAIL     dir/fails.js" "$T/sum" || fail "unexpected list"
grep -q "profile      $T/p.json" "$T/sum" || fail "profile path"
# No colour when asked for none.
! grep -q "$(printf '\033')" "$T/sum" || fail "colour escapes with NO_COLOR"

# The tree CPU of the summary is the sum of the profile's Tree CPU markers (ms, to the display's
# precision), and the test counts are the profile's test markers.
prof_ms=$(sum "$T/p.json" "Tree CPU" cpuTime)
line=$(grep "tree CPU" "$T/sum")
shown=$(echo "$line" | sed -n 's/.*tree CPU *\([0-9.]*\) \(ms\|s\) .*/\1 \2/p')
[ -n "$shown" ] || fail "no tree CPU figure: $line"
shown_ms=$(echo "$shown" | awk '{ print ($2 == "s") ? $1 * 1000 : $1 }')
awk -v a="$shown_ms" -v b="$prof_ms" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * b + 10) }' ||
    fail "summary tree CPU $shown_ms ms vs profile $prof_ms ms"
[ "$(count "$T/p.json" test)" -eq 3 ] || fail "profile test markers"
peak=$(maxof "$T/p.json" "Tree Memory" rss)
[ -n "$peak" ] || fail "no Tree Memory"
grep -q "peak memory" "$T/sum" || fail "no peak memory line"

# --quiet: no summary at all.
"$RESMON_RUN" -q --no-profile -- true 2>"$T/q"
[ ! -s "$T/q" ] || fail "--quiet printed: $(cat "$T/q")"

# The terminal: under a pseudo-terminal, the command runs in a process group of its own (not
# resmon-run's) and that group is the terminal's foreground group.
if command -v script >/dev/null 2>&1; then
    script -qec "'$RESMON_RUN' -q --no-profile -- sh -c 'echo \$(ps -o pgid=,tpgid= -p \$\$) \$(ps -o pgid= -p \$PPID)'" /dev/null > "$T/tty" 2>&1 || true
    set -- $(tr -d '\r' < "$T/tty" | tail -n 1)
    [ $# -eq 3 ] || fail "unexpected output under a terminal: $(cat "$T/tty")"
    [ "$1" = "$2" ] || fail "the command's group does not own the terminal: $*"
    [ "$1" != "$3" ] || fail "the command runs in resmon-run's group: $*"
fi
# ---- an expected failure and an unexpected pass are said as such (real pytest and Node TAP logs) --
expect_status 0 "$RESMON_RUN" -i 0 -o "$T/xf.json" -- cat "$TOP_SRCDIR/tests/fixtures/real/pytest/msgs.log" \
    >/dev/null 2>"$T/xf.err"
grep -qx '  tests        13: 3 PASS, 7 FAIL, 1 ERROR, 1 SKIP, 1 XFAIL (8 unexpected)' "$T/xf.err" ||
    fail "xfail: $(grep '^  tests' "$T/xf.err")"
: >"$T/xp.md"
expect_status 0 env GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY="$T/xp.md" "$RESMON_RUN" -i 0 -o "$T/xp.json" -- \
    cat "$TOP_SRCDIR/tests/fixtures/real/tap-node/runner-output.log" >/dev/null 2>"$T/xp.err"
grep -q '^  tests        158: .*, 5 XPASS, 4 XFAIL (65 unexpected)$' "$T/xp.err" || fail "xpass: $(grep '^  tests' "$T/xp.err")"
grep -q '^  unexpected   XPASS    sync pass todo$' "$T/xp.err" || fail "xpass: the unexpected list: $(cat "$T/xp.err")"
grep -qx '| XPASS | sync pass todo | 0 ms |' "$T/xp.md" || fail "xpass: the job summary: $(cat "$T/xp.md")"
exit 0

#!/bin/sh
# A real RSpec run (Debian's ruby-rspec, --format documentation) under resmon-run, stopped as a
# timeout with KILL while an example hangs (with TERM, RSpec still prints its lists: see the
# manual): every example that ended before the stop is a test marker,
# passed ones named by their groups' path as RSpec names them ("Cart#total sums"), the failure
# and the pending ones from their marks; the hanging example's context line is no test; no
# example is open at the stop (an example's line comes at its end). Skips without rspec.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
command -v rspec >/dev/null 2>&1 || skip "no rspec (apt-get install ruby-rspec)"

mkdir -p "$T/proj/spec"
cat >"$T/proj/spec/a_spec.rb" <<'RB'
class Cart
  def total(prices) = prices.sum
end
RSpec.describe Cart do
  describe '#total' do
    it 'is zero when empty' do
      expect(Cart.new.total([])).to eq(0)
    end
    context 'with two items' do
      it 'sums the prices' do
        expect(Cart.new.total([2, 3])).to eq(5)
      end
    end
  end
end
RSpec.describe 'Network' do
  it 'connects' do
    expect(1).to eq(1)
  end
  it 'retries' do
    expect(2).to eq(3)
  end
  it 'is pending', pending: 'not yet' do
    expect(1).to eq(2)
  end
  context 'when the server hangs' do
    it 'waits' do
      File.write(ENV.fetch('HANG_FILE'), 'hanging')
      sleep 60
    end
  end
end
RB
P=$T/rspec.json
(cd "$T/proj" && HANG_FILE=$T/hanging exec "$RESMON_RUN" -s KILL -i 0.05 -o "$P" --junit="$T/rspec.xml" -- \
    rspec --format documentation) >"$T/rspec.out" 2>"$T/rspec.err" &
sup=$!
# the hanging example runs, and the stream holds the results before it (the pending example's
# line was read: the tree's last result before the hang)
new_events
"$HELPER" wait-file "$T/hanging" hanging &
wait_event "found *" >/dev/null
stream_shows "$P" "Network is pending"
kill -ALRM $sup
wait $sup && st=0 || st=$?
[ "$st" = 137 ] || fail "status $st, want 137 (timed out with KILL, as GNU timeout): $(cat "$T/rspec.err")"
grep -q "^  when the server hangs$" "$T/rspec.out" || fail "not RSpec's tree: $(cat "$T/rspec.out")"
"$CHECK" "$P" || fail "invalid profile"
expect_test "$P" "Cart#total is zero when empty" PASS green
expect_test "$P" "Cart#total with two items sums the prices" PASS green
expect_test "$P" "Network connects" PASS green
expect_test "$P" "Network retries" FAIL orange PASS
expect_test "$P" "Network is pending" SKIP yellow
[ "$(count "$P" test)" = 5 ] || fail "$(count "$P" test) test markers, 5 examples ended: $(markers "$P" test)"
[ "$(val "$(test_line "$P" "Network is pending" | cut -f5)" message)" = "not yet" ] || fail "pending: no reason"
# a passed example ran from the tree's line before it to its own
d=$(duration "$(test_line "$P" "Network connects")")
ge "$d" 0 || fail "Network connects: duration $d"
# no example is open: the stop names the last result, as for other formats that print a test
# only at its end
case "$(markers "$P" timeout | cut -f5)" in
*'"openTests":["after 5, Network is pending"]'*) ;;
*) fail "the stop names otherwise: $(markers "$P" timeout)" ;;
esac
grep -q '<testsuite [^>]* tests="5" failures="1" errors="0" skipped="1"' "$T/rspec.xml" ||
    fail "JUnit: $(grep '<testsuite ' "$T/rspec.xml")"
if frontend_available; then
    out=$(FFCHECK_LABELS=Test FFPROF_SAMPLES=10 frontend "$P") || fail "the front-end refuses the profile"
    printf '%s\n' "$out" | grep -qF "label Test:test: Cart#total with two items sums the prices | " ||
        fail "the front-end shows no passed example: $out"
    echo "front-end: $(printf '%s\n' "$out" | grep -c '^label Test:test: ') test markers labelled"
fi
check_every_profile

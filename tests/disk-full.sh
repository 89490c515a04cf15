#!/bin/sh
# The profile's disk: unwritable, full, full for a while. The command's output and status never
# change; resmon-run says at once what it cannot write, keeps it in memory and writes it when
# space comes back, and the summary says what was lost. As root the directories are small tmpfs
# mounts in a private mount namespace.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
if [ "$(id -u)" = 0 ]; then
    unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /mnt' 2>/dev/null || skip "root, but no private mount namespace with tmpfs"
fi

# An unwritable directory: refused before the command runs.
mkdir "$T/ro"
if [ "$(id -u)" != 0 ]; then
    chmod 0555 "$T/ro"
    expect_status 125 "$RESMON_RUN" -o "$T/ro/p.json" -- sh -c "echo ran >'$T/ran'" 2>/dev/null
    chmod 0755 "$T/ro"
else
    unshare -m sh -c 'mount -t tmpfs -o ro,size=64k tmpfs "$1/ro" && exec "$2" -o "$1/ro/p.json" -- sh -c "echo ran >\"$1/ran\"" 2>/dev/null' \
        sh "$T" "$RESMON_RUN"
    [ $? = 125 ] || fail "unwritable directory: status $?"
fi
[ -e "$T/ran" ] && fail "the command ran although the profile directory is unwritable"

# Without root, a small filesystem to fill is not to be had: the rest needs a tmpfs.
[ "$(id -u)" = 0 ] || { echo "the full-disk cases need a tmpfs mount (root)"; exit 77; }

# A full disk: a chatty command whose lines are test results against a 64 KiB tmpfs.
chatty="seq 1 3000 | sed 's|.*|TEST-START \| disk/test_&.js\nTEST-UNEXPECTED-FAIL \| disk/test_&.js \| failure number &|'; '$HELPER' textlines 2000000; exit 7"
sh -c "$chatty" >"$T/chatty.want"
[ $? = 7 ] || fail "the chatty command does not exit 7 by itself"
mkdir "$T/small"
unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs "$1/small" || exit 99
    "$2" -i 0.01 -o "$1/small/p.json" -- sh -c "$3" >"$1/chatty.got" 2>"$1/chatty.err"
    echo $? >"$1/chatty.status"' sh "$T" "$RESMON_RUN" "$chatty"
[ "$(cat "$T/chatty.status")" = 7 ] || fail "disk full: status $(cat "$T/chatty.status"), expected 7"
cmp -s "$T/chatty.want" "$T/chatty.got" || fail "disk full: the command's output changed"
grep -q "cannot write the profile stream .*No space left on device" "$T/chatty.err" ||
    fail "disk full: not said at once: $(cat "$T/chatty.err")"
grep -q "could not be written (No space left on device): the profile lacks them" "$T/chatty.err" ||
    fail "disk full: the summary does not say what was lost: $(cat "$T/chatty.err")"

# The JUnit report on a full disk: the disk's own error, and nothing of libxml2's on stderr.
mkdir "$T/junit-full"
unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs "$1/junit-full" || exit 99
    "$2" -i 0.05 --junit "$1/junit-full/j.xml" -o "$1/junit-full.json" -- sh -c "$3" >/dev/null 2>"$1/junit-full.err"
    echo $? >"$1/junit-full.status"' sh "$T" "$RESMON_RUN" "seq 1 3000 | sed 's|.*|TEST-START \| t&\nTEST-PASS \| t& \| ok|'"
[ "$(cat "$T/junit-full.status")" = 0 ] || fail "JUnit on a full disk: status $(cat "$T/junit-full.status")"
grep -q "cannot write the JUnit report '$T/junit-full/j.xml': No space left on device" "$T/junit-full.err" ||
    fail "JUnit on a full disk: not the disk's error: $(cat "$T/junit-full.err")"
grep -v "^resmon-run: \|^  " "$T/junit-full.err" >"$T/junit-full.stray" &&
    fail "JUnit on a full disk: stray lines on stderr: $(cat "$T/junit-full.stray")"
[ "$(count "$T/junit-full.json" test)" = 3000 ] || fail "JUnit on a full disk: the profile lacks tests"

# Full for a while: 100 tests, the disk fills, 100 tests, space comes back, 100 tests. Nothing is
# lost: the lines that could not be written waited in memory.
mkdir "$T/while"
tests() { # tests FROM TO: mozlog test lines
    echo "i=$1; while [ \$i -lt $2 ]; do echo \"{\\\"action\\\":\\\"test_start\\\",\\\"test\\\":\\\"w/t\$i\\\"}\"; echo \"{\\\"action\\\":\\\"test_end\\\",\\\"test\\\":\\\"w/t\$i\\\",\\\"status\\\":\\\"PASS\\\"}\"; i=\$((i + 1)); done"
}
cmd="$(tests 0 100); echo x >'$T/phase1'; '$HELPER' wait-file '$T/go1' go; $(tests 100 200); echo x >'$T/phase2'; '$HELPER' wait-file '$T/go2' go; $(tests 200 300)"
unshare -m sh -c 'mount -t tmpfs -o size=256k tmpfs "$1/while" || exit 99
    "$2" -i 0.05 -o "$1/while/p.json" -- sh -c "$3" >/dev/null 2>"$1/while.err" &
    sup=$!
    "$4" wait-file "$1/phase1" x || exit 98
    dd if=/dev/zero of="$1/while/filler" bs=4k 2>/dev/null
    echo go >"$1/go1"
    "$4" wait-file "$1/phase2" x || exit 98
    "$4" wait-file "$1/while.err" "cannot write the profile stream" || exit 97
    rm "$1/while/filler"
    echo go >"$1/go2"
    wait $sup
    echo $? >"$1/while.status"
    cp "$1/while/p.json" "$1/while.json"' sh "$T" "$RESMON_RUN" "$cmd" "$HELPER"
st=$?
[ $st = 0 ] || fail "full for a while: the scenario failed ($st): $(cat "$T/while.err")"
[ "$(cat "$T/while.status")" = 0 ] || fail "full for a while: status $(cat "$T/while.status")"
grep -q "written again: nothing was lost" "$T/while.err" || fail "full for a while: $(cat "$T/while.err")"
n=$(count "$T/while.json" test)
[ "$n" = 300 ] || fail "full for a while: $n tests of 300 in the profile"
lost=$(val "$(markers "$T/while.json" finalize | tail -n 1 | cut -f5)" linesLost)
[ "$lost" = 0 ] || fail "full for a while: $lost lines lost"
exit 0

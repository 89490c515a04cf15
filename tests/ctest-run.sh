#!/bin/sh
# A real ctest run (CMake's ctest -j2 --output-on-failure on a small project built here) under
# resmon-run: every ctest test is a test marker with ctest's status, its failure text, and the
# tests ctest lists as failed are the unexpected ones; the profile as the front-end loads it shows
# them. Skips without cmake and a C compiler.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
command -v cmake >/dev/null 2>&1 && command -v ctest >/dev/null 2>&1 || skip "no cmake/ctest"
command -v cc >/dev/null 2>&1 || skip "no C compiler"

mkdir -p "$T/proj"
cat >"$T/proj/t.c" <<'C'
#include <signal.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    if (!strcmp(argv[1], "fail")) { fprintf(stderr, "expected 3, got 2\n"); return 1; }
    if (!strcmp(argv[1], "skip")) return 77;
    if (!strcmp(argv[1], "segv")) raise(SIGSEGV);
    return 0;
}
C
cat >"$T/proj/CMakeLists.txt" <<'C'
cmake_minimum_required(VERSION 3.19)
project(itest C)
enable_testing()
add_executable(t t.c)
add_test(NAME passes COMMAND t pass)
add_test(NAME "with spaces.and dots" COMMAND t pass)
add_test(NAME fails COMMAND t fail)
add_test(NAME skips COMMAND t skip)
set_tests_properties(skips PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME segfaults COMMAND t segv)
add_test(NAME missing COMMAND no-such-program-here)
C
cmake -S "$T/proj" -B "$T/proj/build" >"$T/cmake.out" 2>&1 && cmake --build "$T/proj/build" >>"$T/cmake.out" 2>&1 ||
    skip "cmake could not build the project: $(tail -n 3 "$T/cmake.out")"

P=$T/ctest.json
"$RESMON_RUN" -i 0.05 -o "$P" -- ctest --test-dir "$T/proj/build" -j2 --output-on-failure >"$T/ctest.out" 2>"$T/ctest.err" &&
    fail "ctest passed although tests failed"
"$CHECK" "$P" || fail "invalid profile"
grep -q "The following tests FAILED:" "$T/ctest.out" || fail "not ctest's output: $(cat "$T/ctest.out")"

expect_test "$P" passes PASS green
expect_test "$P" "with spaces.and dots" PASS green
expect_test "$P" fails FAIL orange PASS
expect_test "$P" skips SKIP yellow
expect_test "$P" segfaults CRASH red PASS
expect_test "$P" missing ERROR red PASS
[ "$(count "$P" test)" = 6 ] || fail "$(count "$P" test) test markers, ctest ran 6"
[ "$(val "$(test_line "$P" fails | cut -f5)" message)" = "expected 3, got 2" ] ||
    fail "fails: message $(test_line "$P" fails | cut -f5)"
[ "$(val "$(test_line "$P" segfaults | cut -f5)" message)" = SegFault ] || fail "segfaults: no kind"
# ctest's own list of failed tests is the unexpected results
listed=$(sed -n '/The following tests FAILED:/,/^Errors/p' "$T/ctest.out" | sed -n 's/^\t *[0-9]* - \(.*\) ([^)]*)$/\1/p' | sort | tr '\n' ,)
[ "$listed" = "fails,missing,segfaults," ] || fail "ctest's list: $listed"

# -V and -VV (each test's output prefixed by its number, -VV's debug lines), serial and -j2:
# the same tests, the same statuses
for v in -V -VV "-VV -j2"; do
    P2=$T/ctest$(printf '%s' "$v" | tr -d ' ').json
    "$RESMON_RUN" -q -i 0 -o "$P2" -- ctest --test-dir "$T/proj/build" $v >"$T/v.out" 2>&1 && fail "ctest $v passed"
    expect_test "$P2" passes PASS green
    expect_test "$P2" "with spaces.and dots" PASS green
    expect_test "$P2" fails FAIL orange PASS
    expect_test "$P2" skips SKIP yellow
    expect_test "$P2" segfaults CRASH red PASS
    expect_test "$P2" missing ERROR red PASS
    [ "$(count "$P2" test)" = 6 ] || fail "ctest $v: $(count "$P2" test) test markers, ctest ran 6"
done
echo "ctest -V, -VV, -VV -j2: the same 6 tests"

if frontend_available; then
    out=$(FFCHECK_LABELS=Test FFPROF_SAMPLES=10 frontend "$P") || fail "the front-end refuses the profile"
    for t in passes fails skips segfaults missing "with spaces.and dots"; do
        printf '%s\n' "$out" | grep -qF "label Test:test: $t | " || fail "the front-end shows no test marker '$t': $out"
    done
    printf '%s\n' "$out" | grep -F "label Test:test: fails | " | grep -q "Status (status, string)=FAIL; Expected (expected, string)=PASS; Message (message, string)=expected 3, got 2" || fail "the front-end shows fails without FAIL"
    echo "front-end: $(printf '%s\n' "$out" | grep -c '^label Test:test: ') test markers labelled"
fi
check_every_profile

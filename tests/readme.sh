#!/bin/sh
# The README's quick start is what CI runs: its two commands are scripts/demo and scripts/test,
# .ci/run runs scripts/test, and scripts/demo runs the very command the README shows. One version
# number everywhere, and CI checks the package.
set -u
: "${TOP_SRCDIR:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$TOP_SRCDIR" || fail "no source tree"
for f in README scripts/demo scripts/test .ci/run; do
    # A distribution tarball carries no CI configuration: nothing to compare there.
    [ -f "$f" ] || { echo "SKIP: $f not in this tree" >&2; exit 77; }
done

# The quick start: the indented lines between its heading and the next blank-line-led paragraph.
quick=$(awk '/^Quick start/ { on = 1; next } on && /^[^ -]/ { exit } on && /^    [^ ]/' README |
    sed 's/^ *//')
[ "$quick" = "scripts/demo
scripts/test" ] || fail "the quick start's commands are not exactly scripts/demo and scripts/test: $quick"
for s in scripts/demo scripts/test; do
    [ -x "$s" ] || fail "$s is not executable"
done

grep -Eq '^[[:space:]]*scripts/test([[:space:]]|$)' .ci/run || fail ".ci/run does not run scripts/test"

# The demo command the README shows, run as a command (not only echoed) by scripts/demo.
demo=$(grep -E '^    \./resmon-run .*tests/demo/demo-suite$' README | sed 's/^ *//')
[ -n "$demo" ] || fail "the README shows no demo command"
[ "$(printf '%s\n' "$demo" | wc -l)" -eq 1 ] || fail "the README shows several demo commands"
[ "$demo" = "./resmon-run --timeout 20 -o demo-profile.json -- tests/demo/demo-suite" ] ||
    fail "the README's demo command changed: $demo"
grep -qxF "$demo" scripts/demo || fail "scripts/demo does not run '$demo'"
grep -q '^scripts/setup' scripts/demo || fail "scripts/demo does not set up the build"

# One version: configure.ac's (what --version and the profile's meta show) is the Debian
# package's and the one the README's install command names.
version=$(sed -n 's/^AC_INIT(\[resmon-run\], \[\([^]]*\)\].*/\1/p' configure.ac)
[ -n "$version" ] || fail "no version in configure.ac's AC_INIT"
deb=$(sed -n '1s/^resmon-run (\([^)]*\)).*/\1/p' debian/changelog)
[ "$deb" = "$version" ] || fail "debian/changelog's version $deb is not configure.ac's $version"
grep -q "apt-get install \./build-deb/resmon-run_${version}_" README ||
    fail "the README's install command does not name version $version"
grep -Eq '^[[:space:]]*scripts/package --check' .ci/run || fail ".ci/run does not check the package"
exit 0

#!/bin/sh
# The manual: mandoc finds nothing to warn about; its SYNOPSIS says what --help says in both
# modes; every long option of --help is documented, and the manual documents no other.
. "$TOP_SRCDIR/tests/lib.sh"
command -v mandoc >/dev/null 2>&1 || skip "mandoc not installed"
MAN="$TOP_SRCDIR/man/resmon-run.1"

out=$(mandoc -T lint -W warning "$MAN" 2>&1) || fail "mandoc -T lint: $out"
[ -z "$out" ] || fail "mandoc -T lint: $out"
grep -qx '\.so man1/resmon-run\.1' "$TOP_SRCDIR/man/resmon-timeout.1" || fail "resmon-timeout.1 is not a .so link"

# The page as text, without overstrike (bold/underline) sequences.
mandoc -T ascii "$MAN" | sed 's/.\x08//g' >"$T/page" || fail "mandoc -T ascii"
section() { # section NAME: the body of that section, leading blanks removed
    awk -v s="$1" '/^[A-Z]/ { on = ($0 == s); next } on' "$T/page" | sed 's/^ *//'
}

section SYNOPSIS >"$T/synopsis"
for prog in "$RESMON_RUN" "$TIMEOUT_LINK"; do
    usage=$("$prog" --help | head -1 | sed 's/^Usage: //')
    [ -n "$usage" ] || fail "$prog --help printed no usage line"
    grep -qxF "$usage" "$T/synopsis" || fail "SYNOPSIS lacks '$usage'; it says: $(cat "$T/synopsis")"
done
[ "$(grep -c . "$T/synopsis")" -eq 2 ] || fail "SYNOPSIS has other lines: $(cat "$T/synopsis")"

# Long options: --help's option lines, and the tags of the manual's OPTIONS section.
"$RESMON_RUN" --help | grep -E '^  +(-[A-Za-z], )?--[a-z]' |
    sed -E 's/^ +(-[A-Za-z], )?(--[a-z][a-z-]*).*/\2/' | sort -u >"$T/help-opts"
awk '/^[A-Z]/ { on = ($0 == "OPTIONS"); next } on' "$T/page" | grep -E '^       (-[A-Za-z], )?--[a-z]' |
    sed -E 's/^ +(-[A-Za-z], )?(--[a-z][a-z-]*).*/\2/' | sort -u >"$T/man-opts"
[ "$(wc -l <"$T/help-opts")" -ge 20 ] || fail "too few options found in --help"
missing=$(comm -23 "$T/help-opts" "$T/man-opts")
[ -z "$missing" ] || fail "options of --help missing from the manual: $missing"
extra=$(comm -13 "$T/help-opts" "$T/man-opts")
[ -z "$extra" ] || fail "options in the manual that --help does not show: $extra"

# Short options too: the same letters for the same long options.
"$RESMON_RUN" --help | grep -oE '^  +-[A-Za-z], --[a-z-]+' | sed 's/^ *//' | sort >"$T/help-short"
grep -oE '^       -[A-Za-z], --[a-z-]+' "$T/page" | sed 's/^ *//' | sort -u >"$T/man-short"
cmp -s "$T/help-short" "$T/man-short" || fail "short options differ: $(diff "$T/help-short" "$T/man-short")"
exit 0

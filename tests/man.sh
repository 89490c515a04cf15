#!/bin/sh
# The manual: mandoc finds nothing to warn about; its SYNOPSIS says what --help says in both
# modes; every long option of --help is documented, and the manual documents no other. The
# test-log formats are the registry's (src/testlog/registry.h), in its order, wherever they are
# listed: --help, the manual's TEST LOGS and --parse, the README's layout.
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

# The formats: a format added to the registry and not to a document that lists them fails here.
sed -n 's/^TL_FORMAT(\([a-z0-9_]*\),.*/\1/p' "$TOP_SRCDIR/src/testlog/registry.h" >"$T/formats"
[ "$(wc -l <"$T/formats")" -ge 10 ] || fail "too few formats read from registry.h: $(cat "$T/formats")"
names() { # a list of names ("a, b, c and d") from stdin, one a line
    { cat; echo; } | tr -s ',. \n' '\n\n\n\n' | sed '/^and$/d; /^$/d'
}
same_formats() { # same_formats WHERE FILE
    cmp -s "$T/formats" "$2" || fail "$1 does not list the registry's formats in its order:
$(diff "$T/formats" "$2")"
}
"$RESMON_RUN" --help | awk '/^ +--parse=/ { on = 1; sub(/.*comma list of:/, ""); print; next }
    on && /^ +-/ { exit } on' | names >"$T/help-formats"
same_formats "--help's --parse" "$T/help-formats"
awk '/^[A-Z]/ { on = ($0 == "OPTIONS"); next } on' "$T/page" |
    awk '/^ +--parse=FORMATS/ { on = 1; next } on && /^       [^ ]/ { exit } on' | tr '\n' ' ' |
    sed 's/.*list of//; s/\..*//' | names >"$T/man-parse"
same_formats "the manual's --parse" "$T/man-parse"
# TEST LOGS: its first sentence names each format's parser in parentheses: "TAP 13 and 14 (tap)"
awk '/^TEST LOGS$/ { on = 1; next } on && /^$/ { exit } on' "$T/page" | tr '\n' ' ' | sed 's/)\..*/)/' |
    grep -oE '\([a-z0-9_]+[,)]' | tr -d '(,)' >"$T/man-testlogs"
same_formats "the manual's TEST LOGS" "$T/man-testlogs"
tr '\n' ' ' <"$TOP_SRCDIR/README" | sed 's/.*one parser per format://; s/).*//' | names >"$T/readme-formats"
same_formats "the README's formats/ (one parser per format: ...)" "$T/readme-formats"
exit 0

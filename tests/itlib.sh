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

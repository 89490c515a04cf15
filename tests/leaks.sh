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
# nothing more starts until resmon-run has read that line and written the test's marker: a
# process started after a test's end line and before resmon-run reads it is taken for the test's
# (the manual says so). The wait forks nothing (read is a builtin), or the fork would be that.
ended() {
    while IFS= read -r l; do
        case \$l in *'"type":"Test","test":"leaky.js"'*'"status":"PASS"'*) return 0 ;; esac
    done <"$T/p.json"
    return 1
}
until ended; do :; done
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

# go test -json over two packages: the go tool builds and runs a package's test binary while the
# other package's test runs, and none of the tool's own processes is that test's leftover. b
# takes longer to build (it links net/http), so its binary starts while a's test runs. The first
# test to start ends once the other package's test binary runs beside it and two samples have
# seen it; the other ends once the stream has the first's end.
if command -v go >/dev/null 2>&1; then
    mkdir -p "$T/gomod/a" "$T/gomod/b"
    printf 'module example.com/m\n\ngo 1.18\n' >"$T/gomod/go.mod"
    for p in a b; do
        o=b heavy=
        [ $p = a ] || o=a heavy='_ "net/http"'
        cat >"$T/gomod/$p/${p}_test.go" <<EOG
package $p

import (
	"bytes"
	"os"
	"testing"
	"time"
	$heavy
)

func samples(dir string) int {
	s, _ := os.ReadFile(dir + "/go.json")
	return bytes.Count(s, []byte("\"name\":\"Tree CPU\""))
}

func TestMeets(t *testing.T) {
	dir := os.Getenv("GL_DIR")
	_, err := os.Stat(dir + "/$o-started")
	second := err == nil
	os.WriteFile(dir+"/$p-started", nil, 0o644)
	seen := -1
	for i := 0; i < 3000; i++ {
		if second {
			if s, _ := os.ReadFile(dir + "/go.json"); bytes.Contains(s, []byte("\"scope\":\"example.com/m/$o\",\"status")) {
				return
			}
		} else if _, err := os.Stat(dir + "/$o-started"); err == nil && seen < 0 {
			seen = samples(dir)
		} else if seen >= 0 && samples(dir) > seen+1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
EOG
    done
    (cd "$T/gomod" && GL_DIR=$T GOCACHE="$(go_cache)" GOPATH="$T/go" GOFLAGS=-mod=mod GOPROXY=off \
        exec "$RESMON_RUN" -i 0.05 -o "$T/go.json" -- go test -json -p 2 ./... >"$T/go.out" 2>"$T/go.err")
    st=$?
    [ $st -eq 0 ] || fail "go test: status $st: $(cat "$T/go.err") $(cat "$T/go.out")"
    "$CHECK" "$T/go.json" >/dev/null || fail "go test: invalid profile"
    [ "$(markers "$T/go.json" test | grep -c '"name":"TestMeets"')" -eq 2 ] || fail "go test: not two tests: $(cat "$T/go.out")"
    # the other package's test binary ran beside the first test (what would be taken for its leftover)
    { markers "$T/go.json" test; markers "$T/go.json" process | grep '\.test -test\.'; } >"$T/go.markers"
    awk -F'\t' 'BEGIN { n = m = 0 } $1 == "test" { s[n] = $2 + 0; e[n++] = $3 + 0 } $1 == "process" { ps[m] = $2 + 0; pe[m++] = $3 + 0 }
        END { for (i = 0; i < n; i++) for (j = 0; j < m; j++) if (ps[j] > s[i] && ps[j] < e[i] && pe[j] > e[i]) exit 0; exit 1 }' \
        "$T/go.markers" || fail "go test: no test binary ran beside a test: $(cat "$T/go.markers")"
    ! markers "$T/go.json" test | grep -q '"leaked' || fail "go test: the go tool's processes taken for leftovers: $(markers "$T/go.json" test)"
    ! grep -q leaked "$T/go.err" || fail "go test: the summary counts leaks: $(cat "$T/go.err")"
    echo "go test -json: the go tool's processes beside a test are not its leftovers"
else
    echo "go test -json: skipped, no go here"
fi

#!/bin/sh
# Replays every fuzz corpus: tests/fuzz/replay_NAME over tests/fuzz/corpus/NAME/.
set -u
status=0 ran=0
for bin in "$HELPERS"/fuzz/replay_*; do
    [ -x "$bin" ] || continue
    name=${bin##*/replay_}
    dir="$TOP_SRCDIR/tests/fuzz/corpus/$name"
    [ -d "$dir" ] || { echo "no corpus for $name"; status=1; continue; }
    echo "replay $name"
    "$bin" "$dir" || status=1
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || exit 77
exit $status

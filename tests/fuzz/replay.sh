#!/bin/sh
# Replays every fuzz corpus: tests/fuzz/replay_NAME over tests/fuzz/corpus/NAME/, and each format
# of the registry (src/testlog/registry.h) that has no target of its own through replay_format
# (FUZZ_FORMAT=NAME) over tests/fuzz/corpus/NAME/, so a format without a corpus fails here.
set -u
status=0 ran=0
for bin in "$HELPERS"/fuzz/replay_*; do
    [ -x "$bin" ] || continue
    name=${bin##*/replay_}
    [ "$name" != format ] || continue
    dir="$TOP_SRCDIR/tests/fuzz/corpus/$name"
    [ -d "$dir" ] || { echo "no corpus for $name"; status=1; continue; }
    echo "replay $name"
    "$bin" "$dir" || status=1
    ran=$((ran + 1))
done
formats=$(sed -n 's/^TL_FORMAT(\([a-z0-9_]*\),.*/\1/p' "$TOP_SRCDIR/src/testlog/registry.h")
[ -n "$formats" ] || { echo "no formats in src/testlog/registry.h"; exit 1; }
for name in $formats; do
    [ ! -x "$HELPERS/fuzz/replay_$name" ] || continue # its own target, replayed above
    dir="$TOP_SRCDIR/tests/fuzz/corpus/$name"
    [ -d "$dir" ] || { echo "no corpus for format $name (tests/fuzz/corpus/$name/)"; status=1; continue; }
    echo "replay $name (replay_format)"
    FUZZ_FORMAT=$name "$HELPERS/fuzz/replay_format" "$dir" || status=1
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || exit 77
exit $status

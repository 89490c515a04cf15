#!/bin/sh
# Storage IO: 4 MiB written and fsynced to a real disk under the build directory show in the
# tree's IO (/proc/PID/io). Skipped where the kernel has no per-process IO accounting, or the
# build directory is not on a disk.
. "$TOP_SRCDIR/tests/lib.sh"
. "$TOP_SRCDIR/tests/itlib.sh"
[ -r /proc/self/io ] || skip "no /proc/self/io (no per-process IO accounting)"
fs=$(stat -f -c %T "$TOP_BUILDDIR" 2>/dev/null)
case "$fs" in tmpfs | ramfs | overlayfs) skip "the build directory is on $fs, not a disk" ;; esac
f="$TOP_BUILDDIR/tests/io-accounting.$$"
"$RESMON_RUN" -i 0.05 -o "$T/io.json" -- "$HELPER" writefile 4194304 "$f" || fail "writer failed"
rm -f "$f"
"$CHECK" "$T/io.json" || fail "IO: invalid profile"
wb=$(sum "$T/io.json" "Tree IO" write_bytes)
echo "IO: 4 MiB written, Tree IO write_bytes sum $wb"
ge "$wb" 4194304 || fail "IO: Tree IO write_bytes $wb < 4 MiB"
exit 0

#!/bin/sh
# The lock-down refuses what it leaves out: with the test-only trigger (configure
# --enable-test-hooks) resmon-run makes a forbidden call after locking down and must die of SIGSYS.
# Skipped in builds without the trigger.
. "$TOP_SRCDIR/tests/lib.sh"
unset RESMON_SANDBOX_DEBUG # turns the kills expected below into logged refusals

"$RESMON_RUN" --version | grep -q "test hooks" || skip "resmon-run built without --enable-test-hooks"
grep -q '^Seccomp:' /proc/self/status || skip "the kernel has no seccomp"

calls="socket execve fork mmap-exec mprotect-exec ptrace"
case "$(uname -m)" in
x86_64)
    calls="$calls x32"
    # i386 syscalls from a 64-bit process: only where the kernel has the ia32 entry at all.
    "$HELPER" int80 >/dev/null 2>&1 && calls="$calls i386" ;;
esac

for what in $calls; do
    new_events
    RESMON_TEST_FORBIDDEN_SYSCALL=$what "$RESMON_RUN" --no-profile -- "$HELPER" sleep 30 2>"$T/err"
    st=$?
    [ $st -gt 128 ] && [ "$(kill -l $st)" = SYS ] ||
        fail "forbidden $what: resmon-run exited $st, not killed by SIGSYS: $(cat "$T/err")"
done

# --no-sandbox: the same call is made and allowed (the trigger itself works).
RESMON_TEST_FORBIDDEN_SYSCALL=socket "$RESMON_RUN" --no-profile --no-sandbox -- true 2>"$T/err"
st=$?
[ $st -eq 0 ] || fail "--no-sandbox with the trigger exited $st"
grep -q "forbidden socket returned" "$T/err" || fail "--no-sandbox: trigger not run: $(cat "$T/err")"

# Debug mode: the refusal is logged, fails with ENOSYS, and the run goes on.
RESMON_SANDBOX_DEBUG=1 RESMON_TEST_FORBIDDEN_SYSCALL=socket "$RESMON_RUN" --no-profile -- true 2>"$T/err"
st=$?
[ $st -eq 0 ] || fail "debug mode exited $st: $(cat "$T/err")"
grep -q "refused syscall socket" "$T/err" || fail "debug mode did not log: $(cat "$T/err")"
grep -q "forbidden socket returned -1 (errno 38)" "$T/err" || fail "debug mode: $(cat "$T/err")"
exit 0

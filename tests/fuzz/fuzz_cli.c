/* Fuzz target: the command line's pure parsers — durations, signal names, --deny class lists — on
 * the same bytes taken as one argument (up to the first NUL). Checks the error contract (out-params
 * untouched on failure) and that every accepted signal survives a round trip through its name. */
#include "base/parse.h"
#include "cli.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run/sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    uint64_t ns = 0x5a5a5a5a5a5a5a5aULL, again = 0;
    int r = parse_duration(s, &ns);
    if (r < 0 && ns != 0x5a5a5a5a5a5a5a5aULL)
        __builtin_trap();
    if (r == 0 && (parse_duration(s, &again) != 0 || again != ns))
        __builtin_trap();

    int sig = -12345;
    r = parse_signal(s, &sig);
    if (r < 0 && sig != -12345)
        __builtin_trap();
    if (r == 0) {
        if (sig < 0 || sig > SIGRTMAX)
            __builtin_trap();
        char name[32];
        int back = -1;
        if (parse_signal(signal_name(sig, name, sizeof name), &back) != 0 || back != sig)
            __builtin_trap();
    }

    unsigned mask = 0x80000000u;
    r = sandbox_parse_deny(s, &mask);
    if (r < 0 && mask != 0x80000000u)
        __builtin_trap();
    if (r == 0 && (mask & ~(0x80000000u | SANDBOX_DENY_NETWORK | SANDBOX_DENY_PTRACE | SANDBOX_DENY_NAMESPACES)))
        __builtin_trap();
    free(s);
    return 0;
}

/* sandbox_gen — writes the seccomp programs of the lock-down and of the watchdog (sandbox.h) as C,
 * at build time:
 *   sandbox_gen > sandbox_bpf.c
 * Each is libseccomp's own output for the rules in sandbox.c; resmon-run loads them as they are,
 * so that no run pays for building them. */
#include <linux/filter.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/sandbox.h"

/* One program as a C array: name and name_len. */
static int emit(const char *name, int (*export)(struct sock_fprog *))
{
    struct sock_fprog prog;
    int r = export(&prog);
    if (r < 0 || !prog.len) {
        fprintf(stderr, "sandbox_gen: cannot build the %s filter: %s\n", name, strerror(r < 0 ? -r : EINVAL));
        return -1;
    }
    printf("\nextern const unsigned short %s_len;\n"
           "extern const struct sock_filter %s[];\n\n"
           "const unsigned short %s_len = %u;\n"
           "const struct sock_filter %s[] = {\n",
           name, name, name, (unsigned)prog.len, name);
    for (unsigned i = 0; i < prog.len; i++) {
        const struct sock_filter *f = &prog.filter[i];
        printf("    {0x%04x, %u, %u, 0x%08x},\n", (unsigned)f->code, (unsigned)f->jt, (unsigned)f->jf, (unsigned)f->k);
    }
    printf("};\n");
    free(prog.filter);
    return 0;
}

int main(void)
{
    printf("/* Written by sandbox_gen from the rules in sandbox.c. */\n"
           "#include <linux/filter.h>\n");
    if (emit("sandbox_self_bpf", sandbox_self_filter_export) < 0 ||
        emit("sandbox_watchdog_bpf", sandbox_watchdog_filter_export) < 0)
        return 1;
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

/* sandbox_gen — writes the lock-down's seccomp program (sandbox.h) as C, at build time:
 *   sandbox_gen > sandbox_bpf.c
 * The program is libseccomp's own output for the rules in sandbox.c; resmon-run loads it as it is,
 * so that no run pays for building it. */
#include <linux/filter.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/sandbox.h"

int main(void)
{
    struct sock_fprog prog;
    int r = sandbox_self_filter_export(&prog);
    if (r < 0 || !prog.len) {
        fprintf(stderr, "sandbox_gen: cannot build the filter: %s\n", strerror(r < 0 ? -r : EINVAL));
        return 1;
    }
    printf("/* Written by sandbox_gen from the rules in sandbox.c. */\n"
           "#include <linux/filter.h>\n\n"
           "extern const unsigned short sandbox_self_bpf_len;\n"
           "extern const struct sock_filter sandbox_self_bpf[];\n\n"
           "const unsigned short sandbox_self_bpf_len = %u;\n"
           "const struct sock_filter sandbox_self_bpf[] = {\n",
           (unsigned)prog.len);
    for (unsigned i = 0; i < prog.len; i++) {
        const struct sock_filter *f = &prog.filter[i];
        printf("    {0x%04x, %u, %u, 0x%08x},\n", (unsigned)f->code, (unsigned)f->jt, (unsigned)f->jf, (unsigned)f->k);
    }
    printf("};\n");
    free(prog.filter);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

/* clone3.c — see clone3.h. */
#include "base/clone3.h"

#include <sys/syscall.h>

#if HAVE_CLONE3_CALL
long clone3_call(struct clone_args *args, int (*fn)(void *), void *arg)
{
    long ret;
    register int (*r12)(void *) __asm__("r12") = fn;
    register void *r13 __asm__("r13") = arg;
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "mov %%r13, %%rdi\n\t"
                     "call *%%r12\n\t"
                     "mov %%eax, %%edi\n\t"
                     "mov %[sys_exit], %%eax\n\t"
                     "syscall\n\t"
                     "ud2\n"
                     "1:"
                     : "=a"(ret)
                     : "0"((long)SYS_clone3), "D"(args), "S"(sizeof *args), "r"(r12), "r"(r13),
                       [sys_exit] "i"(SYS_exit)
                     : "rcx", "r11", "memory");
    return ret;
}
#endif

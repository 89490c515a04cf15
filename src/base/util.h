/* util.h — small helpers every module uses: scope-bound cleanup, monotonic time, and I/O that
 * survives EINTR and short transfers.
 *
 * Cleanup attributes run when a variable goes out of scope, so an early `return -errno` never
 * leaks. TAKE_PTR/TAKE_FD hand ownership out of such a variable.
 */
#ifndef RESMON_UTIL_H
#define RESMON_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define NSEC_PER_SEC UINT64_C(1000000000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_USEC UINT64_C(1000)
/* A deadline that never comes. */
#define NS_INFINITY UINT64_MAX

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        close(*fd);
        errno = saved;
    }
}
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

#define TAKE_PTR(p)                                                                                \
    ({                                                                                             \
        __typeof__(p) _tp = (p);                                                                   \
        (p) = NULL;                                                                                \
        _tp;                                                                                       \
    })
#define TAKE_FD(fd)                                                                                \
    ({                                                                                             \
        int _tf = (fd);                                                                            \
        (fd) = -1;                                                                                 \
        _tf;                                                                                       \
    })

/* Monotonic clock in nanoseconds: every interval and deadline in resmon-run uses it. */
uint64_t now_ns(void);
/* Wall clock, epoch milliseconds (only for the profile's startTime and producer timestamps). */
double wall_ms(void);

/* write(2) until all of buf is written; retries EINTR and EAGAIN is NOT handled (use on blocking
 * fds). Returns 0 or -errno. */
int write_all(int fd, const void *buf, size_t len);
/* read(2) retrying EINTR. Returns bytes read (0 at EOF) or -errno. */
ssize_t read_retry(int fd, void *buf, size_t len);
/* Read a whole small file (at most max bytes) at dirfd/path into buf, NUL-terminated.
 * Returns the length or -errno. Truncates silently at max-1 bytes. */
ssize_t read_file_at(int dirfd, const char *path, char *buf, size_t max);

/* Whether cut (n bytes) is whole (m bytes) cut short, so that a late whole text replaces it: cut
 * as a harness cuts a line at the terminal's width, a shorter beginning of it then "..." (pytest
 * -v's skip reasons); or its first line, whole, after which whole goes on ("exit status 1" on
 * meson's result line, then the test's output). The newline may be a JSON text's escape. */
bool text_cut_of(const char *cut, size_t n, const char *whole, size_t m);

/* A comma-separated list of names (no spaces, none empty) into the OR of their bits, or -EINVAL
 * at the first name not in names[0..n). The option parsers' lists (--parse, --deny, --dump). */
struct name_bit {
    const char *name;
    unsigned bit;
};
int parse_name_list(const char *list, const struct name_bit *names, size_t n, unsigned *ret_mask);
/* Make room in the array *pp of *cap elements of size bytes for need elements, doubling the
 * capacity (first 16) as often as it takes. 0 or -ENOMEM (the array is left as it was). */
int array_reserve(void *pp, size_t *cap, size_t need, size_t size);
/* Room for one more element when n are in use. */
static inline int array_grow(void *pp, size_t *cap, size_t n, size_t size)
{
    return n < *cap ? 0 : array_reserve(pp, cap, n + 1, size);
}

/* Saturating helpers for counters from untrusted text. */
static inline uint64_t sat_add_u64(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/* Allocation that aborts on exhaustion is NOT used: allocation failures propagate as -ENOMEM. */

#endif

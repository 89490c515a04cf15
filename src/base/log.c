/* log.c — see log.h. */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *program = "resmon-run";

void log_set_program(const char *name)
{
    const char *slash = strrchr(name, '/');
    program = slash ? slash + 1 : name;
}

const char *log_program(void) { return program; }

static void vlog(int err, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vlog(int err, const char *fmt, va_list ap)
{
    char line[4096];
    int saved = errno;
    int n = snprintf(line, sizeof line, "%s: ", program);
    if (n < 0)
        n = 0;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    if (err) {
        int k = snprintf(line + len, sizeof line - len, ": %s", strerror(err));
        if (k > 0)
            len += (size_t)k;
        if (len > sizeof line - 2)
            len = sizeof line - 2;
    }
    line[len++] = '\n';
    /* One write: a message is never interleaved with the command's own stderr bytes. */
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
    errno = saved;
}

void log_msg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(0, fmt, ap);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(0, fmt, ap);
    va_end(ap);
}

void log_errno(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(err < 0 ? -err : err, fmt, ap);
    va_end(ap);
}

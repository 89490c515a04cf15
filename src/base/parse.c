/* parse.c — see parse.h. */
#include "base/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

/* ---- durations ----------------------------------------------------------------------------- */

int parse_duration(const char *s, uint64_t *ret_ns)
{
    if (!s || !*s)
        return -EINVAL;
    /* strtold skips leading blanks and accepts "inf" and hex floats, as GNU timeout does; a sign
     * is checked on the text because -1e-10000 underflows to -0.0, which compares equal to 0. */
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    bool negative = *p == '-';
    char *end;
    errno = 0;
    long double v = strtold(s, &end);
    int err = errno;
    if (end == s)
        return -EINVAL;
    long double mult = 1;
    if (*end) {
        switch (*end) {
        case 's': mult = 1; break;
        case 'm': mult = 60; break;
        case 'h': mult = 3600; break;
        case 'd': mult = 86400; break;
        default: return -EINVAL;
        }
        if (end[1])
            return -EINVAL;
    }
    if (isnan(v))
        return -EINVAL;
    if (negative) {
        /* "-0" is zero; any negative amount, even an infinitesimal one, is an error. */
        if (v != 0 || err == ERANGE)
            return -EINVAL;
        *ret_ns = 0;
        return 0;
    }
    if (v == 0) {
        /* Underflow: the text named a positive amount too small to represent. */
        *ret_ns = err == ERANGE ? 1 : 0;
        return 0;
    }
    long double ns = ceill(v * mult * 1e9L);
    if (!(ns < 18446744073709551615.0L)) /* also catches inf */
        *ret_ns = UINT64_MAX;
    else
        *ret_ns = ns < 1 ? 1 : (uint64_t)ns;
    return 0;
}

/* ---- signals ------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    int num;
} signals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT},   {"ILL", SIGILL},
    {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"IOT", SIGIOT},     {"BUS", SIGBUS},
    {"FPE", SIGFPE},   {"KILL", SIGKILL},     {"USR1", SIGUSR1},   {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2}, {"PIPE", SIGPIPE},     {"ALRM", SIGALRM},   {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CLD", SIGCHLD},    {"CONT", SIGCONT},
    {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},     {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},
    {"URG", SIGURG},   {"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ},   {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF}, {"WINCH", SIGWINCH},   {"IO", SIGIO},       {"POLL", SIGPOLL},
    {"PWR", SIGPWR},   {"SYS", SIGSYS},
};

int parse_signal(const char *s, int *ret_sig)
{
    if (!s || !*s)
        return -EINVAL;
    if (isdigit((unsigned char)*s)) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (*end || errno || v < 0 || v > SIGRTMAX)
            return -EINVAL;
        *ret_sig = (int)v;
        return 0;
    }
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
        if (strcasecmp(s, signals[i].name) == 0) {
            *ret_sig = signals[i].num;
            return 0;
        }
    /* RTMIN, RTMIN+n, RTMAX, RTMAX-n */
    int base = 0, dir = 0;
    if (strncasecmp(s, "RTMIN", 5) == 0)
        base = SIGRTMIN, dir = 1;
    else if (strncasecmp(s, "RTMAX", 5) == 0)
        base = SIGRTMAX, dir = -1;
    if (dir) {
        const char *rest = s + 5;
        long off = 0;
        if (*rest) {
            if (*rest != (dir > 0 ? '+' : '-') || !isdigit((unsigned char)rest[1]))
                return -EINVAL;
            char *end;
            off = strtol(rest + 1, &end, 10);
            /* Also bounds the sum below (strtol saturates at LONG_MAX). */
            if (*end || off > SIGRTMAX - SIGRTMIN)
                return -EINVAL;
        }
        long sig = base + dir * off;
        if (sig < SIGRTMIN || sig > SIGRTMAX)
            return -EINVAL;
        *ret_sig = (int)sig;
        return 0;
    }
    return -EINVAL;
}

const char *signal_name(int sig, char *buf, size_t size)
{
    for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
        if (signals[i].num == sig) {
            snprintf(buf, size, "%s", signals[i].name);
            return buf;
        }
    if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
        int mid = (SIGRTMIN + SIGRTMAX) / 2;
        if (sig == SIGRTMIN)
            snprintf(buf, size, "RTMIN");
        else if (sig == SIGRTMAX)
            snprintf(buf, size, "RTMAX");
        else if (sig <= mid)
            snprintf(buf, size, "RTMIN+%d", sig - SIGRTMIN);
        else
            snprintf(buf, size, "RTMAX-%d", SIGRTMAX - sig);
        return buf;
    }
    snprintf(buf, size, "%d", sig);
    return buf;
}

/* ---- sizes ----------------------------------------------------------------------------------- */

int parse_size(const char *s, uint64_t *ret_bytes)
{
    if (!s || !*s)
        return -EINVAL;
    /* digits with at most one '.': no sign, exponent or hex (strtod would take them) */
    size_t n = 0, dots = 0, digits = 0;
    for (; isdigit((unsigned char)s[n]) || s[n] == '.'; n++)
        s[n] == '.' ? dots++ : digits++;
    if (!digits || dots > 1)
        return -EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end != s + n || !(v > 0))
        return -EINVAL;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I'))
        end++;
    if (mul > 1 && (*end == 'b' || *end == 'B'))
        end++;
    else if (mul == 1 && (*end == 'b' || *end == 'B'))
        end++;
    if (*end)
        return -EINVAL;
    double bytes = v * mul;
    if (bytes >= 9223372036854775808.0)
        return -ERANGE;
    if (bytes < 1)
        return -EINVAL;
    *ret_bytes = (uint64_t)bytes;
    return 0;
}

/* ghactions.c — see ghactions.h. */
#include "ghactions.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

bool gha_active(enum ci_mode mode, bool timeout_mode, const char *github_actions_env)
{
    if (mode == CI_GITHUB)
        return true;
    if (mode == CI_NONE || timeout_mode)
        return false;
    return github_actions_env && strcmp(github_actions_env, "true") == 0;
}

struct out {
    char *p;
    size_t len, cap;
    bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->failed || !n)
        return;
    if (array_reserve(&o->p, &o->cap, o->len + n + 1, 1) < 0) {
        o->failed = true;
        return;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }

/* The runner's escaping: data (a message), or a property value as well. */
static void escaped(struct out *o, const char *s, bool property)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '%': puts_(o, "%25"); break;
        case '\r': puts_(o, "%0D"); break;
        case '\n': puts_(o, "%0A"); break;
        case ':':
        case ',':
            if (property) {
                char e[4];
                snprintf(e, sizeof e, "%%%02X", (unsigned)*s);
                puts_(o, e);
            } else
                put(o, s, 1);
            break;
        default: put(o, s, 1);
        }
    }
}

static void command(struct out *o, const char *title, const char *message)
{
    puts_(o, "::error title=");
    escaped(o, title, true);
    puts_(o, "::");
    escaped(o, message, false);
    puts_(o, "\n");
}

/* A stop resmon-run decided (or the OOM killer): what a CI maintainer must see first. */
static bool own_verdict(const struct summary_facts *f, const char **what)
{
    switch (f->end) {
    case SUMMARY_TIMEOUT: *what = "timeout"; return true;
    case SUMMARY_OUTPUT_TIMEOUT: *what = "output timeout"; return true;
    case SUMMARY_LIMIT: *what = f->limit_name ? f->limit_name : "limit"; return true;
    case SUMMARY_OOM_KILLED: *what = "OOM kill"; return true;
    default: return false;
    }
}

int gha_format_commands(const struct summary_facts *f, const struct gha_result *res, size_t n, uint64_t total,
                        char **ret_text, size_t *ret_len)
{
    struct out o = {0};
    char title[128], msg[1024];
    const char *what;
    if (own_verdict(f, &what)) {
        snprintf(title, sizeof title, "%s: %s%s", f->program ? f->program : "resmon-run", what,
                 f->end == SUMMARY_LIMIT ? " limit" : "");
        size_t l = summary_end_text(f, msg, sizeof msg);
        for (size_t i = 0; i < f->n_open && l < sizeof msg - 1; i++) {
            int k = snprintf(msg + l, sizeof msg - l, "%s%s", i ? ", " : "; still running: ", f->open[i].id);
            l = k < 0 ? l : MIN(l + (size_t)k, sizeof msg - 1);
        }
        if (f->open_total > f->n_open && l < sizeof msg - 1)
            snprintf(msg + l, sizeof msg - l, " and %llu more", (unsigned long long)(f->open_total - f->n_open));
        command(&o, title, msg);
    }
    size_t shown = MIN(n, (size_t)GHA_MAX_ANNOTATIONS);
    for (size_t i = 0; i < shown; i++) {
        const struct gha_result *r = &res[i];
        snprintf(title, sizeof title, "%s %s", r->status, r->test);
        char dur[32];
        snprintf(dur, sizeof dur, "%.3f s", (double)r->duration_ns / 1e9);
        if (r->expected)
            snprintf(msg, sizeof msg, "%s: %s, expected %s (after %s)", r->test, r->status, r->expected, dur);
        else
            snprintf(msg, sizeof msg, "%s: %s (after %s)", r->test, r->status, dur);
        command(&o, title, msg);
    }
    if (total > shown) {
        snprintf(title, sizeof title, "%s: unexpected results", f->program ? f->program : "resmon-run");
        snprintf(msg, sizeof msg, "%llu more unexpected result%s (the job summary lists the first ones)",
                 (unsigned long long)(total - shown), total - shown == 1 ? "" : "s");
        command(&o, title, msg);
    }
    if (o.failed) {
        free(o.p);
        return -ENOMEM;
    }
    if (!o.p && !(o.p = strdup("")))
        return -ENOMEM;
    *ret_text = o.p;
    *ret_len = o.len;
    return 0;
}

int gha_append(const char *path, const char *text, size_t len)
{
    _cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0)
        return -errno;
    int r = write_all(fd, text, len);
    if (r == 0 && close(TAKE_FD(fd)) < 0 && errno != EINTR)
        r = -errno;
    return r;
}

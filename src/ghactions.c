/* ghactions.c — see ghactions.h. */
#include "ghactions.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sanitize.h"
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

static void put_on(void *ctx, const char *p, size_t n) { put(ctx, p, n); }

/* The runner's escaping, and no control character (sanitize.h): data (a message), or a property
 * value as well. A character snprintf cut in two at a buffer's end is left out: the text stays
 * UTF-8. */
static void escaped(struct out *o, const char *s, bool property)
{
    size_t n = s ? sanitize_uncut(s, strlen(s)) : 0;
    sanitize(property ? SANITIZE_GHA_PROPERTY : SANITIZE_GHA_DATA, s, n, put_on, o);
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
                        struct gha_said *said, char **ret_text, size_t *ret_len)
{
    struct out o = {0};
    char title[128], msg[1024];
    const char *what;
    if (!said->verdict && own_verdict(f, &what)) {
        said->verdict = true;
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
    for (size_t i = said->results; i < shown; i++) {
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
    said->results = MAX(said->results, shown);
    uint64_t accounted = said->results + said->counted;
    if (total > accounted) {
        uint64_t rest = total - accounted;
        snprintf(title, sizeof title, "%s: unexpected results", f->program ? f->program : "resmon-run");
        snprintf(msg, sizeof msg, "%llu more unexpected result%s%s (the job summary lists the first ones)",
                 (unsigned long long)rest, rest == 1 ? "" : "s", said->counted ? " since the last count" : "");
        command(&o, title, msg);
        said->counted += rest;
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

/* Whether the file at fd still ends with s's text, as written. */
static bool still_ours(const struct gha_summary_file *s, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_dev != s->dev || st.st_ino != s->ino || st.st_size < 0 ||
        (uint64_t)st.st_size != (uint64_t)s->start + s->len)
        return false;
    char buf[4096];
    for (size_t off = 0; off < s->len;) {
        size_t want = MIN(sizeof buf, s->len - off);
        ssize_t got = pread(fd, buf, want, s->start + (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)want || memcmp(buf, s->text + off, want) != 0)
            return false;
        off += want;
    }
    return true;
}

/* Remember text as written at [start, start + len) of the file at fd. */
static int remember(struct gha_summary_file *s, int fd, off_t start, const char *text, size_t len)
{
    struct stat st;
    char *copy = malloc(len + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, text, len);
    copy[len] = '\0';
    free(s->text);
    s->text = copy;
    s->len = len;
    s->start = start;
    s->written = fstat(fd, &st) == 0;
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    return s->written ? 0 : -errno;
}

int gha_summary_put(struct gha_summary_file *s, const char *path, const char *text, size_t len)
{
    if (s->written) {
        _cleanup_close_ int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd >= 0 && still_ours(s, fd)) {
            /* The new text over the old, then the old one's tail cut: at every moment the file
             * holds a whole summary (the kill may come now). */
            int r = lseek(fd, s->start, SEEK_SET) < 0 ? -errno : write_all(fd, text, len);
            if (r == 0 && len < s->len && ftruncate(fd, s->start + (off_t)len) < 0)
                r = -errno;
            if (r == 0)
                r = remember(s, fd, s->start, text, len);
            else
                s->written = false; /* what is there now is no text of ours to replace */
            return r;
        }
    }
    _cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0)
        return -errno;
    int r = write_all(fd, text, len);
    /* O_APPEND: the offset is now the end of what was just written */
    off_t end = r == 0 ? lseek(fd, 0, SEEK_CUR) : -1;
    if (r == 0 && end < (off_t)len)
        r = end < 0 ? -errno : -EIO;
    if (r == 0)
        r = remember(s, fd, end - (off_t)len, text, len);
    else
        s->written = false;
    if (r == 0 && close(TAKE_FD(fd)) < 0 && errno != EINTR)
        r = -errno;
    return r;
}

void gha_summary_release(struct gha_summary_file *s)
{
    free(s->text);
    *s = (struct gha_summary_file){0};
}

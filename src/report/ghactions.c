/* ghactions.c — see ghactions.h. */
#include "report/ghactions.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/outfile.h"
#include "base/sanitize.h"
#include "base/util.h"

bool gha_active(enum ci_mode mode, bool timeout_mode, const char *github_actions_env)
{
    if (mode == CI_GITHUB)
        return true;
    if (mode == CI_NONE || timeout_mode)
        return false;
    return github_actions_env && strcmp(github_actions_env, "true") == 0;
}

static void put_on(void *ctx, const char *p, size_t n) { buf_add(ctx, p, n); }

/* The runner's escaping, and no control character (sanitize.h): data (a message), or a property
 * value as well. A character snprintf cut in two at a buffer's end is left out: the text stays
 * UTF-8. */
static void escaped(struct buf *o, const char *s, bool property)
{
    size_t n = s ? sanitize_uncut(s, strlen(s)) : 0;
    sanitize(property ? SANITIZE_GHA_PROPERTY : SANITIZE_GHA_DATA, s, n, put_on, o);
}

/* The runner's escaping of n bytes of a property value. */
static void escaped_n(struct buf *o, const char *s, size_t n)
{
    char *c = strndup(s, n);
    if (!c) {
        o->failed = true;
        return;
    }
    escaped(o, c, true);
    free(c);
}

static void command(struct buf *o, const char *level, const char *dir, const char *file, size_t file_len,
                    unsigned line, const char *title, const char *message)
{
    buf_puts(o, "::");
    buf_puts(o, level);
    buf_puts(o, " ");
    if (file) {
        buf_puts(o, "file=");
        if (dir && *dir && !memchr(file, '/', file_len)) {
            escaped(o, dir, true);
            buf_puts(o, "/");
        }
        escaped_n(o, file, file_len);
        if (line) {
            char b[24];
            snprintf(b, sizeof b, ",line=%u", line);
            buf_puts(o, b);
        }
        buf_puts(o, ",");
    }
    buf_puts(o, "title=");
    escaped(o, title, true);
    buf_puts(o, "::");
    escaped(o, message, false);
    buf_puts(o, "\n");
}

static bool path_char(char c)
{
    return c > ' ' && c != ':' && c != '"' && c != '\'' && c != '(' && c != ')' && c != '<' && c != '>';
}

/* "PATH:LINE:" at p (a path with a '.' in its last part), Perl's "at PATH line LINE", or a
 * JavaScript frame's "at PATH:LINE[:COL]" (Node's TAP location). */
static bool location_at(const char *p, const char **file, size_t *len, unsigned *line)
{
    const char *q = p;
    bool perl = strncmp(q, "at ", 3) == 0;
    if (perl)
        q += 3;
    size_t n = 0;
    while (path_char(q[n]))
        n++;
    const char *dot = n ? memrchr(q, '.', n) : NULL;
    const char *slash = n ? memrchr(q, '/', n) : NULL;
    if (!dot || (slash && slash > dot) || dot == q + n - 1)
        return false;
    const char *d = q + n;
    bool js = perl && *d == ':';
    if (!js && (perl ? strncmp(d, " line ", 6) != 0 : *d != ':'))
        return false;
    d += perl && !js ? 6 : 1;
    char *end;
    unsigned long l = strtoul(d, &end, 10);
    if (end == d || l == 0 || l > 10000000 || (!perl && *end != ':'))
        return false;
    *file = q;
    *len = n;
    *line = (unsigned)l;
    return true;
}

bool gha_location(const char *test, const char *message, const char **file, size_t *file_len, unsigned *line)
{
    *file = NULL;
    *file_len = 0;
    *line = 0;
    const char *dc = test ? strstr(test, "::") : NULL;
    if (dc && dc - test > 3 && memcmp(dc - 3, ".py", 3) == 0 && !memchr(test, ' ', (size_t)(dc - test))) {
        *file = test;
        *file_len = (size_t)(dc - test);
    }
    for (const char *p = message; p && *p; p++) {
        bool line_start = p == message || p[-1] == '\n';
        const char *f;
        size_t n;
        unsigned l;
        if (line_start)
            while (*p == ' ' || *p == '\t' || *p == '#')
                p++;
        bool word = line_start || p[-1] == ' ';
        if (word && location_at(p, &f, &n, &l) && (line_start || strncmp(p, "at ", 3) == 0)) {
            /* a pytest file's own line wins; a location elsewhere stands alone */
            if (*file && (n != *file_len || memcmp(f, *file, n) != 0))
                continue;
            *file = f;
            *file_len = n;
            *line = l;
            break;
        }
        if (!*p)
            break;
    }
    return *file != NULL;
}

/* The module path of go.mod's text ("module example.com/m", maybe quoted), malloc'ed; NULL:
 * none. */
static char *go_module(const char *go_mod)
{
    for (const char *l = go_mod; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "") {
        if (strncmp(l, "module", 6) != 0 || (l[6] != ' ' && l[6] != '\t'))
            continue;
        const char *p = l + 6;
        while (*p == ' ' || *p == '\t')
            p++;
        bool quoted = *p == '"' || *p == '`';
        char q = *p;
        p += quoted;
        size_t n = 0;
        while (p[n] && p[n] != '\n' && p[n] != '\r' && (quoted ? p[n] != q : p[n] != ' ' && p[n] != '\t'))
            n++;
        return n ? strndup(p, n) : NULL;
    }
    return NULL;
}

char *gha_package_dir(const char *go_mod, const char *cwd, const char *workspace, const char *test,
                      size_t scope_len)
{
    char *mod = go_module(go_mod);
    if (!mod || !test || !scope_len || !cwd || cwd[0] != '/') {
        free(mod);
        return NULL;
    }
    size_t ml = strlen(mod);
    const char *sub = NULL;
    if (scope_len == ml && strncmp(test, mod, ml) == 0)
        sub = test + scope_len;
    else if (scope_len > ml && strncmp(test, mod, ml) == 0 && test[ml] == '/')
        sub = test + ml + 1;
    free(mod);
    if (!sub)
        return NULL;
    size_t sl = (size_t)(test + scope_len - sub);
    const char *rel = ""; /* cwd in the repository */
    if (workspace && *workspace) {
        size_t wl = strlen(workspace);
        while (wl > 1 && workspace[wl - 1] == '/')
            wl--;
        if (workspace[0] != '/' || strncmp(cwd, workspace, wl) != 0 || (cwd[wl] && cwd[wl] != '/'))
            return NULL;
        rel = cwd + wl + (cwd[wl] == '/');
    }
    char *s;
    if (asprintf(&s, "%s%s%.*s", rel, *rel && sl ? "/" : "", (int)sl, sub) < 0)
        return NULL;
    return s;
}

/* A stop resmon-run decided (or the OOM killer): what a CI maintainer must see first. */
static bool own_verdict(const struct summary_facts *f, const char **what)
{
    switch (f->end) {
    case RUN_TIMEOUT: *what = "timeout"; return true;
    case RUN_OUTPUT_TIMEOUT: *what = "output timeout"; return true;
    case RUN_MEMORY:
    case RUN_CPU:
    case RUN_TASKS: *what = f->limit_name ? f->limit_name : "limit"; return true;
    case RUN_OOM_KILL: *what = "OOM kill"; return true;
    default: return false;
    }
}

#define GHA_MESSAGE_MAX 4096 /* bytes of a message (before escaping) */

int gha_format_commands(const struct summary_facts *f, const struct gha_result *res, size_t n, bool midline,
                        struct gha_said *said, char **ret_text, size_t *ret_len)
{
    struct buf o = {0};
    char title[128], msg[GHA_MESSAGE_MAX];
    const char *what;
    if (midline && ((!said->verdict && own_verdict(f, &what)) || said->results < MIN(n, (size_t)GHA_MAX_RESULTS)))
        buf_puts(&o, "\n");
    if (!said->verdict && own_verdict(f, &what)) {
        said->verdict = true;
        snprintf(title, sizeof title, "%s: %s%s", f->program ? f->program : "resmon-run", what,
                 f->end == RUN_MEMORY || f->end == RUN_CPU || f->end == RUN_TASKS ? " limit" : "");
        size_t l = summary_end_text(f, msg, sizeof msg);
        for (size_t i = 0; i < f->n_open && l < sizeof msg - 1; i++) {
            int k = snprintf(msg + l, sizeof msg - l, "%s%s", i ? ", " : "; still running: ", f->open[i].id);
            l = k < 0 ? l : MIN(l + (size_t)k, sizeof msg - 1);
        }
        if (f->open_total > f->n_open && l < sizeof msg - 1)
            snprintf(msg + l, sizeof msg - l, " and %llu more", (unsigned long long)(f->open_total - f->n_open));
        command(&o, "error", NULL, NULL, 0, 0, title, msg);
    }
    size_t shown = MIN(n, (size_t)GHA_MAX_RESULTS);
    for (size_t i = said->results; i < shown; i++) {
        const struct gha_result *r = &res[i];
        char dur[32];
        snprintf(dur, sizeof dur, "%.3f s", (double)r->duration_ns / 1e9);
        bool m = r->message && *r->message;
        /* A test that passed where a failure was expected (pytest's XPASS, a TAP TODO that
         * passed) broke nothing by itself: the harness decides (pytest exits 0 on a non-strict
         * XPASS, and its strict one is a FAILED line), so it is a warning that says what it is. */
        bool xpass = r->expected && (!strcmp(r->status, "PASS") || !strcmp(r->status, "OK"));
        if (xpass)
            snprintf(title, sizeof title, "unexpected pass %s", r->test);
        else
            snprintf(title, sizeof title, "%s %s", r->status, r->test);
        if (xpass)
            snprintf(msg, sizeof msg, "%s: passed, expected %s (after %s)%s%s", r->test, r->expected, dur,
                     m ? "\n" : "", m ? r->message : "");
        else if (r->expected)
            snprintf(msg, sizeof msg, "%s: %s, expected %s (after %s)%s%s", r->test, r->status, r->expected, dur,
                     m ? "\n" : "", m ? r->message : "");
        else
            snprintf(msg, sizeof msg, "%s: %s (after %s)%s%s", r->test, r->status, dur, m ? "\n" : "",
                     m ? r->message : "");
        const char *file;
        size_t file_len;
        unsigned line;
        if (!gha_location(r->test, r->where, &file, &file_len, &line) || !line)
            gha_location(r->test, r->message, &file, &file_len, &line);
        command(&o, xpass ? "warning" : "error", r->dir, file, file_len, line, title, msg);
    }
    said->results = MAX(said->results, shown);
    if (!buf_end(&o)) {
        free(o.p);
        return -ENOMEM;
    }
    if (!o.p && !(o.p = strdup("")))
        return -ENOMEM;
    *ret_text = o.p;
    *ret_len = o.len;
    return 0;
}

char *gha_profile_name(const char *path, const char *cwd, const char *workspace, const char *run_url)
{
    if (!path || !workspace || workspace[0] != '/')
        return NULL;
    char *abs = NULL;
    if (path[0] == '/')
        abs = strdup(path);
    else if (cwd && asprintf(&abs, "%s/%s", cwd, path) < 0)
        abs = NULL;
    if (!abs)
        return NULL;
    size_t wl = strlen(workspace);
    while (wl > 1 && workspace[wl - 1] == '/')
        wl--;
    char *s = NULL;
    const char *rel = abs + wl + 1;
    while (strncmp(rel, "./", 2) == 0)
        rel += 2;
    if (strncmp(abs, workspace, wl) == 0 && abs[wl] == '/' && *rel &&
        asprintf(&s, "%s in the workspace%s%s%s", rel, run_url ? " (the run's artifacts: " : "",
                 run_url ? run_url : "", run_url ? "#artifacts)" : "") < 0)
        s = NULL;
    free(abs);
    return s;
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
        _cleanup_close_ int fd = -1;
        if (outfile_append(path, O_RDWR, &fd) == 0 && still_ours(s, fd)) {
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
    /* The CI system's file, appended to (outfile.h's checks: never a FIFO, nobody else's in a
     * shared directory). */
    _cleanup_close_ int fd = -1;
    int r = outfile_append(path, O_WRONLY | O_APPEND, &fd);
    if (r < 0)
        return r;
    r = write_all(fd, text, len);
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

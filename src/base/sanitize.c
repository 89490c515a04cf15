/* sanitize.c — see sanitize.h. */
#include "base/sanitize.h"

#include <stdbool.h>
#include <string.h>

#include "base/jsonw.h"

/* What an ASCII byte becomes in sink (NULL: itself). control: it is one (C0 or DEL). */
static const char *ascii_replacement(enum sanitize_sink sink, unsigned char c, bool control)
{
    switch (sink) {
    case SANITIZE_TERMINAL: break;
    case SANITIZE_TEXT_FILE:
        if (c == '\t' || c == '\n')
            return NULL;
        break;
    case SANITIZE_GHA_PROPERTY:
        if (c == ':')
            return "%3A";
        if (c == ',')
            return "%2C";
        /* fall through */
    case SANITIZE_GHA_DATA:
        if (c == '%')
            return "%25";
        if (c == '\r')
            return "%0D";
        if (c == '\n')
            return "%0A";
        break;
    case SANITIZE_MARKDOWN:
        if (c == '\t' || c == '\r' || c == '\n')
            return " ";
        if (!control && strchr("\\`*_[]<>|~&", c)) {
            static const char esc[][3] = {"\\\\", "\\`", "\\*", "\\_", "\\[", "\\]", "\\<", "\\>", "\\|", "\\~", "\\&"};
            return esc[strchr("\\`*_[]<>|~&", c) - "\\`*_[]<>|~&"];
        }
        break;
    }
    return control ? "?" : NULL;
}

/* Hands on the safe text in pieces: text kept as it is (whole false: it may be cut between
 * characters), or one replacement (whole true: taken whole or not at all). */
typedef void piece_fn(void *ctx, const char *p, size_t len, bool whole);

static void walk(enum sanitize_sink sink, const char *s, size_t n, piece_fn *put, void *ctx)
{
    size_t run = 0; /* start of the bytes kept as they are, not yet handed on */
    size_t i = 0;
    while (s && i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t k = utf8_char_len(s + i, n - i);
        const char *rep;
        if (k == 1)
            rep = ascii_replacement(sink, c, c < 0x20 || c == 0x7f);
        else if (k == 0 || (c == 0xC2 && (unsigned char)s[i + 1] <= 0x9F)) /* not UTF-8; C1 */
            rep = "?", k = k ? k : 1;
        else
            rep = NULL;
        if (rep) {
            if (i > run)
                put(ctx, s + run, i - run, false);
            put(ctx, rep, strlen(rep), true);
            run = i + k;
        }
        i += k;
    }
    if (s && n > run)
        put(ctx, s + run, n - run, false);
}

struct to_put {
    void (*put)(void *ctx, const char *p, size_t len);
    void *ctx;
};

static void put_on(void *ctx, const char *p, size_t len, bool whole)
{
    (void)whole;
    struct to_put *t = ctx;
    t->put(t->ctx, p, len);
}

void sanitize(enum sanitize_sink sink, const char *s, size_t n, void (*put)(void *ctx, const char *p, size_t len),
              void *ctx)
{
    struct to_put t = {put, ctx};
    walk(sink, s, n, put_on, &t);
}

struct into {
    char *dst;
    size_t size, len;
    bool full; /* a piece did not fit: nothing after it is taken, so nothing is left out between */
};

static void put_into(void *ctx, const char *p, size_t len, bool whole)
{
    struct into *o = ctx;
    if (o->full)
        return;
    size_t room = o->size - 1 - o->len;
    if (len > room) {
        o->full = true;
        len = whole ? 0 : sanitize_cut(p, len, room);
    }
    memcpy(o->dst + o->len, p, len);
    o->len += len;
}

size_t sanitize_into(enum sanitize_sink sink, char *dst, size_t size, const char *s, size_t n)
{
    struct into o = {dst, size, 0, false};
    walk(sink, s, n, put_into, &o);
    dst[o.len] = '\0';
    return o.len;
}

size_t sanitize_cut(const char *s, size_t n, size_t max)
{
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_char_len(s + i, n - i);
        k = k ? k : 1;
        if (i + k > max)
            break;
        i += k;
    }
    return i;
}

size_t sanitize_uncut(const char *s, size_t n)
{
    /* The last lead byte among the last three, and whether its character needs more than is left */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: look further back */
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > back ? n - back : n;
    }
    return n;
}

/* profile_messages.c — see profile_messages.h. */
#include "profile/profile_messages.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "profile/profile_conv.h"

#define REC_NONE UINT32_MAX
#define MSG_TARGETS_MAX 65536u               /* test markers a message may still fill */
#define MSG_PAYLOAD_MAX (64u * 1024)         /* the largest payload that may be filled */
#define MSG_TEXT_MAX (8u * 1024)             /* the longest message text taken (as JSON text) */
#define MSG_SIDE_MAX (UINT64_C(64) << 20)    /* what the filled payloads may take in all */

/* The hash of a name given as the raw JSON text of a string (quotes included), whatever its
 * spelling: escaped names are hashed in their canonical form. */
static int name_hash(struct conv *c, const char *v, size_t n, uint64_t *ret)
{
    const char *s;
    size_t len;
    if (conv_canonical_text(c, v, n, &s, &len) < 0)
        return -ENOMEM;
    *ret = intern_hash(s, len);
    return 0;
}

/* A test marker that went otherwise than expected may be given its message, or the rest of the
 * one it has (text_cut_of), by a later message line: it becomes a target, while there is room. A
 * green one (as expected) never is, and is passed by on its colour's bytes, without a second look
 * at its members. */
int message_note_target(struct conv *c, const char *data, size_t len)
{
    if (c->ntargets == MSG_TARGETS_MAX || len > MSG_PAYLOAD_MAX || memmem(data, len, "\"color\":\"green\"", 15))
        return 0;
    struct js_iter it;
    struct js_member m, test = {0};
    if (js_obj_begin(&it, data, data + len) < 0)
        return 0;
    while (js_obj_next(&it, &m) > 0) {
        if (js_key_is(&m, "color") && js_val_is_str(&m, "green"))
            return 0;
        if (js_key_is(&m, "test") && m.val[0] == '"')
            test = m;
    }
    uint64_t h;
    if (!test.val || name_hash(c, test.val, test.val_len, &h) < 0)
        return test.val ? -ENOMEM : 0;
    if (array_grow(&c->targets, &c->targets_cap, c->ntargets, sizeof *c->targets) < 0)
        return -ENOMEM;
    c->targets[c->ntargets++] = (struct msg_target){h, (uint32_t)(c->nrec - 1)};
    return 0;
}

/* A copy of the payload of record r (from c->side, which may move as it grows, or the input), in
 * *ret (the caller frees it). */
static int rec_payload(struct conv *c, const struct rec *r, char **ret)
{
    size_t len = r->len_cat & REC_LEN_MASK;
    if (!(*ret = malloc(len ? len : 1)))
        return -ENOMEM;
    if (r->name & REC_SIDE) {
        memcpy(*ret, c->side.buf + r->off, len);
        return 0;
    }
    return conv_pread(c->in_fd, *ret, len, r->off);
}

/* Whether the payload data (a validated object) names the test whose raw name text is name. */
static bool payload_names(struct conv *c, const char *data, size_t len, const char *name, size_t n)
{
    struct js_iter it;
    struct js_member m;
    if (js_obj_begin(&it, data, data + len) < 0)
        return false;
    while (js_obj_next(&it, &m) > 0) {
        if (!js_key_is(&m, "test") || m.val[0] != '"')
            continue;
        if (m.val_len == n && memcmp(m.val, name, n) == 0)
            return true;
        if (!memchr(m.val, '\\', m.val_len) && !memchr(name, '\\', n))
            return false;
        jsonw_reset(&c->tmp); /* both in canonical form, one after the other */
        js_canonical_string(&c->tmp, m.val + 1, m.val_len - 2);
        size_t k = c->tmp.len;
        js_canonical_string(&c->tmp, name + 1, n - 2);
        return !jsonw_failed(&c->tmp) && c->tmp.len == 2 * k && memcmp(c->tmp.buf, c->tmp.buf + k, k) == 0;
    }
    return false;
}

/* ,"messageLines":[...] in c->side when the JSON string text (quotes included) holds more than
 * one line: the lines of a message, which the front-end shows a row each (a string field is shown
 * on one line). The text is cut at its \n escapes; a \r before one, and empty last lines, go. */
static void side_message_lines(struct conv *c, const char *text, size_t len)
{
    const char *b = text + 1, *e = text + len - 1, *last = b; /* last: the end of the text's last
                                                                 character that ends no line */
    const char *first_nl = NULL;
    for (const char *p = b; p < e; p++) {
        bool eol = *p == '\\' && p + 1 < e && (p[1] == 'n' || p[1] == 'r');
        if (eol && p[1] == 'n' && !first_nl && last > b)
            first_nl = p;
        p += *p == '\\' && p + 1 < e;
        if (!eol)
            last = p + 1;
    }
    if (!first_nl || first_nl >= last)
        return;
    static const char open[] = ",\"messageLines\":[\"";
    jsonw_append(&c->side, open, sizeof open - 1);
    const char *line = b;
    for (const char *p = b; p < last; p++) {
        if (*p != '\\')
            continue;
        if (p[1] == 'n') {
            const char *end = p;
            if (end - line >= 2 && end[-2] == '\\' && end[-1] == 'r' && (end - line < 3 || end[-3] != '\\'))
                end -= 2;
            jsonw_append(&c->side, line, (size_t)(end - line));
            jsonw_append(&c->side, "\",\"", 3);
            line = p + 2;
        }
        p++;
    }
    jsonw_append(&c->side, line, (size_t)(last - line));
    jsonw_append(&c->side, "\"]", 2);
}

/* Whether the payload (a validated object) may take the message text m: it has no message, or
 * one m's text cut (text_cut_of, on their JSON texts: both are the stream writer's), and its
 * "status" is st when the message line names one (st->val NULL: any). */
static bool cut_message_of(const char *data, size_t len, const struct js_member *m, const struct js_member *st)
{
    struct js_iter it;
    struct js_member pm;
    bool status_ok = !st->val;
    if (js_obj_begin(&it, data, data + len) < 0)
        return false;
    while (js_obj_next(&it, &pm) > 0)
        if (js_key_is(&pm, "message") &&
            !(pm.val[0] == '"' && text_cut_of(pm.val + 1, pm.val_len - 2, m->val + 1, m->val_len - 2)))
            return false;
        else if (js_key_is(&pm, "status") && st->val)
            status_ok = pm.val_len == st->val_len && !memcmp(pm.val, st->val, st->val_len);
    return status_ok;
}

/* {"type":"message","test":NAME,"message":TEXT[,"status":S]}: the target of that name (and
 * status S, when given) gets the message, in a payload of its own in c->side (the first target after the last one filled is tried first: a
 * harness prints its failures' texts in the order the tests ended). 1 taken (a message nothing
 * takes too), 0 invalid, -errno. */
int message_take_line(struct conv *c, const char *line, size_t len)
{
    struct js_iter it;
    struct js_member m, test = {0}, msg = {0}, status = {0};
    int r;
    if (js_obj_begin(&it, line, line + len) < 0)
        return 0;
    while ((r = js_obj_next(&it, &m)) > 0) {
        if (js_key_is(&m, "test"))
            test = m;
        else if (js_key_is(&m, "message"))
            msg = m;
        else if (js_key_is(&m, "status"))
            status = m;
    }
    if (r < 0 || js_skip_ws(it.p, it.e) != it.e || !test.val || test.val[0] != '"' || !msg.val || msg.val[0] != '"')
        return 0;
    uint64_t h;
    if (msg.val_len > MSG_TEXT_MAX || !c->ntargets)
        return 1;
    if ((r = name_hash(c, test.val, test.val_len, &h)) < 0)
        return r;
    for (size_t k = 0; k < c->ntargets; k++) {
        size_t i = (c->target_next + k) % c->ntargets;
        struct msg_target *t = &c->targets[i];
        if (t->rec == REC_NONE || t->hash != h)
            continue;
        struct rec *rc = &c->recs[t->rec];
        size_t plen = rc->len_cat & REC_LEN_MASK;
        _cleanup_free_ char *data = NULL;
        if ((r = rec_payload(c, rc, &data)) < 0)
            return r;
        if (!payload_names(c, data, plen, test.val, test.val_len) || !cut_message_of(data, plen, &msg, &status))
            continue;
        t->rec = REC_NONE;
        c->target_next = i + 1;
        size_t add = plen + 2 * msg.val_len + 32; /* the message, and its lines */
        if (c->message_bytes + add > MSG_SIDE_MAX)
            return 1;
        size_t off = c->side.len;
        jsonw_append(&c->side, "{", 1);
        struct js_iter pi;
        struct js_member pm;
        bool first = true;
        js_obj_begin(&pi, data, data + plen);
        while (js_obj_next(&pi, &pm) > 0) /* its members, less the cut message (and its lines) */
            if (!js_key_is(&pm, "message") && !js_key_is(&pm, "messageLines")) {
                jsonw_append(&c->side, ",", !first);
                jsonw_append(&c->side, pm.key - 1, (size_t)(pm.val + pm.val_len - (pm.key - 1)));
                first = false;
            }
        jsonw_append(&c->side, &",\"message\":"[first], 11 - first); /* the comma unless first */
        jsonw_append(&c->side, msg.val, msg.val_len);
        side_message_lines(c, msg.val, msg.val_len);
        jsonw_append(&c->side, "}", 1);
        if (jsonw_failed(&c->side))
            return -ENOMEM;
        js_lone_surrogates(c->side.buf + off, c->side.len - off, c->side.buf + off);
        c->message_bytes += c->side.len - off;
        rc->off = off;
        rc->len_cat = (uint32_t)(c->side.len - off) | (rc->len_cat & ~REC_LEN_MASK);
        rc->name |= REC_SIDE;
        return 1;
    }
    return 1;
}

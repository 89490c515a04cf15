/* usermark.c — see usermark.h. */
#include "profile/usermark.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/util.h"

#define USERMARK_BATCH 256

struct open_mark {
    char *name, *text;
    bool phase;
    uint64_t start_ns, cpu_start;
};

struct usermark {
    struct usermark_config cfg;
    struct marker_sink sink;
    struct usermark_probe probe;
    int rfd, wfd;
    char *buf; /* one datagram, USERMARK_MAX_RECORD + 1 bytes */
    struct jsonw w;
    struct open_mark open[USERMARK_MAX_OPEN];
    size_t nopen;
    struct usermark_stats stats;
};

int usermark_new(const struct usermark_config *cfg, const struct marker_sink *sink,
                 const struct usermark_probe *probe, struct usermark **ret)
{
    struct usermark *um = calloc(1, sizeof *um);
    if (!um)
        return -ENOMEM;
    um->cfg = *cfg;
    if (!um->cfg.ncpus) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        um->cfg.ncpus = n > 0 ? (unsigned)n : 1;
    }
    if (sink)
        um->sink = *sink;
    if (probe)
        um->probe = *probe;
    jsonw_init(&um->w);
    um->buf = malloc(USERMARK_MAX_RECORD + 1);
    int sv[2];
    if (!um->buf || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0) {
        int r = um->buf ? -errno : -ENOMEM;
        free(um->buf);
        free(um);
        return r;
    }
    um->rfd = sv[0];
    um->wfd = sv[1];
    /* the read end only: the command's end stays blocking so a burst waits instead of failing */
    int fl = fcntl(um->rfd, F_GETFL);
    if (fl < 0 || fcntl(um->rfd, F_SETFL, fl | O_NONBLOCK) < 0) {
        int r = -errno;
        close(sv[0]);
        close(sv[1]);
        free(um->buf);
        free(um);
        return r;
    }
    *ret = um;
    return 0;
}

void usermark_free(struct usermark *um)
{
    if (!um)
        return;
    if (um->rfd >= 0)
        close(um->rfd);
    if (um->wfd >= 0)
        close(um->wfd);
    for (size_t i = 0; i < um->nopen; i++) {
        free(um->open[i].name);
        free(um->open[i].text);
    }
    jsonw_release(&um->w);
    free(um->buf);
    free(um);
}

int usermark_fd_for_child(const struct usermark *um) { return um->wfd; }
int usermark_read_fd(const struct usermark *um) { return um->rfd; }

void usermark_close_child_fd(struct usermark *um)
{
    if (um->wfd >= 0)
        close(um->wfd);
    um->wfd = -1;
}

void usermark_get_stats(const struct usermark *um, struct usermark_stats *ret) { *ret = um->stats; }

static double rel_ms(const struct usermark *um, uint64_t t)
{
    return t >= um->cfg.t0_ns ? (double)(t - um->cfg.t0_ns) / 1e6 : 0.0;
}

/* A record's time in seconds on CLOCK_MONOTONIC → ns, when sane; else now. */
static uint64_t record_time(const struct usermark *um, const cJSON *v, uint64_t now_ns)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0)
        return now_ns;
    double ns = v->valuedouble * 1e9;
    if (ns < (double)um->cfg.t0_ns || ns > (double)now_ns)
        return now_ns;
    return (uint64_t)ns;
}

static uint64_t probe_cpu(const struct usermark *um)
{
    return um->probe.tree_cpu_ns ? um->probe.tree_cpu_ns(um->probe.ctx) : 0;
}

static const struct marker_field phase_fields[] = {
    [PHASE_PHASE] = MARKER_FIELD("phase", "Phase", "string", 0),
    [PHASE_CPUTIME] = MARKER_FIELD("cpuTime", "CPU Time", "duration", MF_OPTIONAL),
    [PHASE_CPUPERCENT] = MARKER_FIELD("cpuPercent", "CPU Percent", "string", MF_OPTIONAL),
};
/* Upstream's Phase, whose table label named the CPU fields: a phase without them (one a killed
 * run left open, or a run without sampling) showed "CPU time:  ()". */
const struct marker_type usermark_phase_type = {
    .name = "Phase",
    .tooltip_label = "{marker.data.phase}",
    .table_label = "{marker.name} \xe2\x80\x94 {marker.data.phase}",
    .chart_label = "{marker.data.phase}",
    .display = "[\"marker-chart\",\"marker-table\",\"timeline-overview\"]",
    .fields = phase_fields,
    .nfields = ARRAY_SIZE(phase_fields),
};

static void text_payload(struct jsonw *w, const char *text) { marker_text_payload(w, text, strlen(text)); }

static void emit(struct usermark *um, const char *name, uint64_t start, uint64_t end, int cat)
{
    if (!jsonw_failed(&um->w))
        marker_emit(&um->sink, name, start, end, cat, um->w.buf, um->w.len);
}

static void state_line(struct usermark *um, const struct open_mark *m, bool open)
{
    if (!um->sink.state)
        return;
    struct jsonw w;
    jsonw_init(&w);
    jsonw_obj_open(&w);
    jsonw_kv_str(&w, "type", open ? "open" : "close");
    jsonw_kv_str(&w, "kind", m->phase ? "phase" : "marker");
    jsonw_kv_str(&w, "key", m->name);
    if (open) {
        jsonw_kv_str(&w, "name", m->phase ? "Phase" : m->name);
        jsonw_kv_double(&w, "startTime", rel_ms(um, m->start_ns), 3);
        jsonw_kv_int(&w, "category", m->phase ? CAT_PHASES : CAT_TASKS);
        if (m->phase)
            jsonw_kv_bool(&w, "cost", true);
        jsonw_key(&w, "data");
        struct jsonw data;
        jsonw_init(&data);
        if (m->phase) {
            struct mpay p;
            mpay_begin(&p, &data, &usermark_phase_type);
            mpay_str(&p, PHASE_PHASE, m->name);
            mpay_end(&p);
        } else
            text_payload(&data, m->text ? m->text : m->name);
        if (jsonw_failed(&data))
            w.failed = true;
        else
            jsonw_raw(&w, data.buf, data.len);
        jsonw_release(&data);
    }
    jsonw_obj_close(&w);
    if (!jsonw_failed(&w))
        marker_state(&um->sink, w.buf, w.len);
    jsonw_release(&w);
}

static int begin(struct usermark *um, const char *name, const char *text, bool phase, uint64_t t)
{
    if (um->nopen == USERMARK_MAX_OPEN) {
        um->stats.overflow++;
        return -ENOSPC;
    }
    struct open_mark m = {0};
    m.name = strdup(name);
    m.text = text ? strdup(text) : NULL;
    if (!m.name || (text && !m.text)) {
        free(m.name);
        free(m.text);
        return -ENOMEM;
    }
    m.phase = phase;
    m.start_ns = t;
    m.cpu_start = probe_cpu(um);
    um->open[um->nopen++] = m;
    state_line(um, &m, true);
    return 0;
}

static void close_at(struct usermark *um, size_t i, uint64_t t)
{
    struct open_mark m = um->open[i];
    memmove(&um->open[i], &um->open[i + 1], (um->nopen - i - 1) * sizeof *um->open);
    um->nopen--;
    if (t < m.start_ns)
        t = m.start_ns;
    if (m.phase) {
        struct mpay p;
        mpay_begin(&p, &um->w, &usermark_phase_type);
        mpay_str(&p, PHASE_PHASE, m.name);
        if (um->probe.tree_cpu_ns) {
            uint64_t now = probe_cpu(um);
            uint64_t cpu = now > m.cpu_start ? now - m.cpu_start : 0;
            mpay_double(&p, PHASE_CPUTIME, (double)cpu / 1e6, 3);
            uint64_t dur = t - m.start_ns;
            if (dur > 0) {
                char pct[32];
                int n = snprintf(pct, sizeof pct, "%.1f%%",
                                 100.0 * (double)cpu / ((double)dur * um->cfg.ncpus));
                mpay_strn(&p, PHASE_CPUPERCENT, pct, (size_t)n);
            }
        }
        mpay_end(&p);
        emit(um, "Phase", m.start_ns, t, CAT_PHASES);
    } else {
        text_payload(&um->w, m.text ? m.text : m.name);
        emit(um, m.name, m.start_ns, t, CAT_TASKS);
    }
    state_line(um, &m, false);
    free(m.name);
    free(m.text);
}

static int end(struct usermark *um, const char *name, bool phase, uint64_t t)
{
    for (size_t i = um->nopen; i > 0; i--) {
        struct open_mark *m = &um->open[i - 1];
        if (m->phase == phase && strcmp(m->name, name) == 0) {
            close_at(um, i - 1, t);
            return 0;
        }
    }
    return -EINVAL;
}

static int handle(struct usermark *um, const cJSON *rec, uint64_t now_ns)
{
    if (!cJSON_IsObject(rec))
        return -EINVAL;
    const cJSON *action = cJSON_GetObjectItemCaseSensitive(rec, "action");
    const cJSON *jname = cJSON_GetObjectItemCaseSensitive(rec, "name");
    const cJSON *jtext = cJSON_GetObjectItemCaseSensitive(rec, "text");
    if (!cJSON_IsString(action) || !cJSON_IsString(jname))
        return -EINVAL;
    const char *a = action->valuestring, *name = jname->valuestring;
    size_t nl = strlen(name);
    if (nl == 0 || nl > USERMARK_MAX_NAME)
        return -EINVAL;
    if (jtext && !cJSON_IsString(jtext))
        return -EINVAL;
    const char *text = jtext ? jtext->valuestring : NULL;
    uint64_t t = record_time(um, cJSON_GetObjectItemCaseSensitive(rec, "time"), now_ns);

    if (!strcmp(a, "event")) {
        text_payload(&um->w, text ? text : name);
        emit(um, name, t, MARKER_INSTANT, CAT_OTHER);
        return 0;
    }
    if (!strcmp(a, "marker")) {
        const cJSON *js = cJSON_GetObjectItemCaseSensitive(rec, "start");
        const cJSON *je = cJSON_GetObjectItemCaseSensitive(rec, "end");
        if (!cJSON_IsNumber(js) || (je && !cJSON_IsNumber(je)))
            return -EINVAL;
        uint64_t e = je ? record_time(um, je, now_ns) : now_ns;
        uint64_t s = record_time(um, js, e);
        if (s > e)
            s = e;
        text_payload(&um->w, text ? text : name);
        emit(um, name, s, e, CAT_TASKS);
        return 0;
    }
    if (!strcmp(a, "begin"))
        return begin(um, name, text, false, t);
    if (!strcmp(a, "end"))
        return end(um, name, false, t);
    if (!strcmp(a, "phase-begin"))
        return begin(um, name, NULL, true, t);
    if (!strcmp(a, "phase-end"))
        return end(um, name, true, t);
    return -EINVAL;
}

int usermark_record(struct usermark *um, const char *buf, size_t len, uint64_t now_ns)
{
    if (len > USERMARK_MAX_RECORD) {
        um->stats.oversized++;
        return -EMSGSIZE;
    }
    const char *end = NULL;
    cJSON *rec = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    /* one object per record: only whitespace may follow it */
    while (rec && end && end < buf + len &&
           (*end == ' ' || *end == '\n' || *end == '\t' || *end == '\r'))
        end++;
    int r = rec && end == buf + len ? handle(um, rec, now_ns) : -EINVAL;
    cJSON_Delete(rec);
    if (r == -EINVAL)
        um->stats.malformed++;
    else if (r == 0)
        um->stats.records++;
    return r == -ENOSPC ? -EINVAL : r;
}

int usermark_drain(struct usermark *um, uint64_t now_ns)
{
    int got = 0;
    while (got < USERMARK_BATCH) {
        /* MSG_TRUNC: the return value is the datagram's real length, so oversize is detectable */
        ssize_t n = recv(um->rfd, um->buf, USERMARK_MAX_RECORD + 1, MSG_TRUNC | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            return got ? got : -errno;
        }
        got++;
        usermark_record(um, um->buf, (size_t)n, now_ns);
    }
    return got;
}

void usermark_finish(struct usermark *um, uint64_t now_ns)
{
    while (um->nopen)
        close_at(um, um->nopen - 1, now_ns);
}

/* ---- client ---- */

int usermark_send(int argc, char **argv)
{
    if (argc < 2 || !argv[0] || !argv[1] || !argv[1][0] || strlen(argv[1]) > USERMARK_MAX_NAME)
        return -EINVAL;
    const char *kind = argv[0];
    int max_args;
    if (!strcmp(kind, "event") || !strcmp(kind, "begin"))
        max_args = 3;
    else if (!strcmp(kind, "end") || !strcmp(kind, "phase-begin") || !strcmp(kind, "phase-end"))
        max_args = 2;
    else
        return -EINVAL;
    if (argc > max_args)
        return -EINVAL;

    const char *env = getenv(USERMARK_ENV);
    if (!env || !*env)
        return -EBADF;
    /* Under a resmon-run that records nothing (--no-profile): the record has nowhere to go, and
     * that is no error of the command's. */
    if (!strcmp(env, USERMARK_ENV_NO_FD))
        return 0;
    char *endp;
    errno = 0;
    long fd = strtol(env, &endp, 10);
    if (errno || *endp || fd < 0 || fd > 1 << 30)
        return -EBADF;

    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    struct jsonw w;
    jsonw_init(&w);
    jsonw_obj_open(&w);
    jsonw_kv_str(&w, "action", kind);
    jsonw_kv_str(&w, "name", argv[1]);
    if (argc == 3)
        jsonw_kv_str(&w, "text", argv[2]);
    jsonw_kv_double(&w, "time", (double)ts.tv_sec + (double)ts.tv_nsec / 1e9, 6);
    jsonw_obj_close(&w);
    int r = 0;
    if (jsonw_failed(&w))
        r = -ENOMEM;
    else if (w.len > USERMARK_MAX_RECORD)
        r = -EMSGSIZE;
    else {
        for (;;) {
            ssize_t n = send((int)fd, w.buf, w.len, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            r = n < 0 ? -errno : 0;
            break;
        }
    }
    jsonw_release(&w);
    return r;
}

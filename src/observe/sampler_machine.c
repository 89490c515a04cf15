/* sampler_machine.c — the machine's sample (sampler.h): /proc/stat, meminfo, diskstats and
 * net/dev read at each tick, turned into the upstream monitor's "CPU Use", "Memory", "IO" and
 * "NetIO" markers, and the machine's counters. Owns those marker types. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/util.h"
#include "observe/procfs.h"
#include "observe/sampler.h"
#include "observe/sampler_impl.h"

/* ---- marker types (markers.h): upstream's machine types ------------------------------------ */

enum { CPU_PCT, CPU_USER_PCT, CPU_IOWAIT_PCT, CPU_SYSTEM_PCT, CPU_NICE_PCT, CPU_IDLE_PCT, CPU_BUSY,
       CPU_NICE, CPU_USER, CPU_SYSTEM, CPU_IOWAIT, CPU_SOFTIRQ };
static const struct marker_field cpu_fields[] = {
    [CPU_PCT] = MARKER_FIELD("cpuPercent", "CPU Percent", "string", 0),
    [CPU_USER_PCT] = MARKER_FIELD("user_pct", "User %", "string", 0),
    [CPU_IOWAIT_PCT] = MARKER_FIELD("iowait_pct", "IO Wait %", "string", 0),
    [CPU_SYSTEM_PCT] = MARKER_FIELD("system_pct", "System %", "string", 0),
    [CPU_NICE_PCT] = MARKER_FIELD("nice_pct", "Nice %", "string", 0),
    [CPU_IDLE_PCT] = MARKER_FIELD("idle_pct", "Idle %", "string", 0),
    [CPU_BUSY] = MARKER_FIELD("busy", "Busy (the machine)", "percentage", 0),
    /* upstream's stacked fractions (nice, +user, +system, +iowait, +softirq), which its graph drew:
     * the "CPU Use" counter draws the machine's CPU now */
    [CPU_NICE] = MARKER_FIELD("nice", "Stacked: nice", "decimal", MF_HIDDEN),
    [CPU_USER] = MARKER_FIELD("user", "Stacked: + user", "decimal", MF_HIDDEN),
    [CPU_SYSTEM] = MARKER_FIELD("system", "Stacked: + system", "decimal", MF_HIDDEN),
    [CPU_IOWAIT] = MARKER_FIELD("iowait", "Stacked: + iowait", "decimal", MF_HIDDEN),
    [CPU_SOFTIRQ] = MARKER_FIELD("softirq", "Stacked: + softirq", "decimal", MF_HIDDEN),
};
const struct marker_type sampler_cpu_type = {
    .name = "CPU", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = cpu_fields, .nfields = ARRAY_SIZE(cpu_fields),
};

enum { MEM_USED, MEM_CACHED, MEM_BUFFERS };
static const struct marker_field mem_fields[] = {
    [MEM_USED] = MARKER_FIELD("used", "Memory Used", "bytes", 0),
    [MEM_CACHED] = MARKER_FIELD("cached", "Memory cached", "bytes", 0),
    [MEM_BUFFERS] = MARKER_FIELD("buffers", "Memory buffers", "bytes", 0),
};
const struct marker_type sampler_mem_type = {
    .name = "Mem", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = mem_fields, .nfields = ARRAY_SIZE(mem_fields),
};

enum { IO_WRITE_BYTES, IO_WRITE_COUNT, IO_READ_BYTES, IO_READ_COUNT, IO_WRITE_TIME, IO_READ_TIME };
static const struct marker_field io_fields[] = {
    [IO_WRITE_BYTES] = MARKER_FIELD("write_bytes", "Written", "bytes", 0),
    [IO_WRITE_COUNT] = MARKER_FIELD("write_count", "Write count", "integer", 0),
    [IO_READ_BYTES] = MARKER_FIELD("read_bytes", "Read", "bytes", 0),
    [IO_READ_COUNT] = MARKER_FIELD("read_count", "Read count", "integer", 0),
    /* the disks' time on requests, summed over requests (several at once count several times) */
    [IO_WRITE_TIME] = MARKER_FIELD("write_time", "Time writing", "duration", 0),
    [IO_READ_TIME] = MARKER_FIELD("read_time", "Time reading", "duration", 0),
};
const struct marker_type sampler_io_type = {
    .name = "IO", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = io_fields, .nfields = ARRAY_SIZE(io_fields),
    .graphs = "[{\"key\":\"read_bytes\",\"color\":\"green\",\"type\":\"bar\"},"
              "{\"key\":\"write_bytes\",\"color\":\"red\",\"type\":\"bar\"}]",
};

enum { NET_SENT_BYTES, NET_SENT_COUNT, NET_RECV_BYTES, NET_RECV_COUNT };
static const struct marker_field netio_fields[] = {
    [NET_SENT_BYTES] = MARKER_FIELD("sent_bytes", "Sent", "bytes", 0),
    [NET_SENT_COUNT] = MARKER_FIELD("sent_count", "Packets sent", "integer", 0),
    [NET_RECV_BYTES] = MARKER_FIELD("recv_bytes", "Received", "bytes", 0),
    [NET_RECV_COUNT] = MARKER_FIELD("recv_count", "Packets received", "integer", 0),
};
const struct marker_type sampler_netio_type = {
    .name = "NetIO", .tooltip_label = "{marker.name}", .display = "[]",
    .fields = netio_fields, .nfields = ARRAY_SIZE(netio_fields),
    .graphs = "[{\"key\":\"recv_bytes\",\"color\":\"blue\",\"type\":\"bar\"},"
              "{\"key\":\"sent_bytes\",\"color\":\"orange\",\"type\":\"bar\"}]",
};

/* The machine's counters (the order of all tracks: sampler_counters in sampler.c). */
const struct marker_counter sampler_cpu_counter = {
    .name = "CPU Use", .category = "CPU",
    .description = "CPU use of the whole machine (100% = every core busy)",
    .marker = "CPU Use", .type = &sampler_cpu_type, .field = CPU_BUSY, .kind = MCOUNT_SHARE,
    .display = "{\"graphType\":\"line-rate\",\"unit\":\"percent\",\"color\":\"yellow\","
               "\"markerSchemaLocation\":null,\"sortWeight\":102,\"label\":\"Machine CPU\",\"tooltipRows\":["
               "{\"type\":\"value\",\"source\":\"rate\",\"format\":{\"unit\":\"percent\"},"
               "\"label\":\"of the machine's CPU\"}]}",
};
const struct marker_counter sampler_mem_counter = {
    .name = "Memory", .category = "Memory",
    .description = "Memory used on the machine (total - free - buffers - cache)",
    .marker = "Memory", .type = &sampler_mem_type, .field = MEM_USED, .kind = MCOUNT_LEVEL,
    .display = "{\"graphType\":\"line-accumulated\",\"unit\":\"bytes\",\"color\":\"orange\","
               "\"markerSchemaLocation\":null,\"sortWeight\":103,\"label\":\"Machine Memory\",\"tooltipRows\":["
               "{\"type\":\"value\",\"source\":\"accumulated\",\"format\":{\"unit\":\"bytes\"},"
               "\"label\":\"used on the machine\"},"
               "{\"type\":\"value\",\"source\":\"count-range\",\"format\":{\"unit\":\"bytes\"},"
               "\"label\":\"range in the graph\"}]}",
};

static bool same_text_is(const struct same_text *t, const char *buf, size_t n)
{
    return t->valid && t->len == n && (n == 0 || memcmp(t->text, buf, n) == 0);
}

/* Keep buf as the text last parsed (its figures: the caller's, in t->v). Without memory the
 * next read is simply parsed. */
static void same_text_keep(struct same_text *t, const char *buf, size_t n)
{
    t->valid = false;
    if (n > t->cap) {
        char *b = realloc(t->text, n);
        if (!b)
            return;
        t->text = b;
        t->cap = n;
    }
    if (n)
        memcpy(t->text, buf, n);
    t->len = n;
    t->valid = true;
}

/* ---- machine ---------------------------------------------------------------------------- */

static bool disk_filter(const char *name, size_t n, void *ctx)
{
    const struct sampler *s = ctx;
    /* /sys/block spells '/' in device names as '!'. */
    for (size_t off = 0; off < s->disk_names_len;) {
        size_t dn = (unsigned char)s->disk_names[off];
        const char *d = s->disk_names + off + 1;
        if (dn == n) {
            size_t i = 0;
            while (i < n && (d[i] == name[i] || (d[i] == '!' && name[i] == '/')))
                i++;
            if (i == n)
                return true;
        }
        off += dn + 1;
    }
    return false;
}

int load_disk_names(struct sampler *s)
{
    const char *dir = s->cfg.sys_block ? s->cfg.sys_block : "/sys/block";
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    size_t cap = 256, len = 0;
    char *buf = malloc(cap);
    struct dirent *e;
    int r = 0;
    while (buf && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        size_t n = strlen(e->d_name) + 1;
        if (n > 256)
            continue; /* NAME_MAX is 255: not a device name */
        if (len + n > cap) {
            char *nb = realloc(buf, cap = (len + n) * 2);
            if (!nb) {
                r = -ENOMEM;
                break;
            }
            buf = nb;
        }
        buf[len] = (char)(unsigned char)(n - 1);
        memcpy(buf + len + 1, e->d_name, n - 1);
        len += n;
    }
    closedir(d);
    if (!buf)
        return -ENOMEM;
    if (r < 0) {
        free(buf);
        return r;
    }
    s->disk_names = buf;
    s->disk_names_len = len;
    return 0;
}

void machine_read(struct sampler *s, struct machine_now *m)
{
    ssize_t n;
    size_t ncpu;
    m->cpu = m->mem = m->disk = m->net = false;
    if (s->fd_stat >= 0 && (n = pread_all(s->fd_stat, s->scratch, SCRATCH_SIZE)) > 0 &&
        procfs_parse_stat(s->scratch, (size_t)n, s->cpu_cur, s->cpu_cap, &ncpu) == 0) {
        m->ncpu = MIN(ncpu, s->cpu_cap);
        m->cpu = true;
    }
    if (s->fd_meminfo >= 0 && (n = pread_all(s->fd_meminfo, s->scratch, SCRATCH_SIZE)) > 0)
        m->mem = procfs_parse_meminfo(s->scratch, (size_t)n, &m->mem_v) == 0;
    if (s->fd_diskstats >= 0 && (n = pread_all(s->fd_diskstats, s->scratch, SCRATCH_SIZE)) >= 0) {
        if (same_text_is(&s->disk_text, s->scratch, (size_t)n)) {
            m->disk_v = s->disk_text.v.disk;
            m->disk = true;
        } else if ((m->disk = procfs_parse_diskstats(s->scratch, (size_t)n, disk_filter, s, &m->disk_v) == 0)) {
            same_text_keep(&s->disk_text, s->scratch, (size_t)n);
            s->disk_text.v.disk = m->disk_v;
        }
    }
    if (s->fd_netdev >= 0 && (n = pread_all(s->fd_netdev, s->scratch, SCRATCH_SIZE)) > 0) {
        if (same_text_is(&s->net_text, s->scratch, (size_t)n)) {
            m->net_v = s->net_text.v.net;
            m->net = true;
        } else if ((m->net = procfs_parse_net_dev(s->scratch, (size_t)n, &m->net_v) == 0)) {
            same_text_keep(&s->net_text, s->scratch, (size_t)n);
            s->net_text.v.net = m->net_v;
        }
    }
}

void machine_commit(struct sampler *s, const struct machine_now *m)
{
    if (m->cpu) {
        struct procfs_cpu *t = s->cpu_prev;
        s->cpu_prev = s->cpu_cur;
        s->cpu_cur = t;
        s->ncpu = m->ncpu;
        s->have_cpu = true;
    }
    if (m->disk) {
        s->disk_prev = m->disk_v;
        s->have_disk = true;
    }
    if (m->net) {
        s->net_prev = m->net_v;
        s->have_net = true;
    }
}

static void kv_pct(struct mpay *p, unsigned field, double v)
{
    char buf[JSONW_FIXED_MAX + 2];
    int n = isfinite(v) ? jsonw_fixed(v, 1, buf) : -1;
    if (n < 0) { /* a rate that is not a number is shown as none */
        memcpy(buf, "0.0", 3);
        n = 3;
    }
    buf[n++] = '%';
    buf[n] = '\0';
    mpay_str(p, field, buf);
}
/* Markers of the upstream monitor, payloads field for field (profile-format.md §5). */
void machine_emit(struct sampler *s, const struct machine_now *m, uint64_t start,
                         uint64_t end)
{
    struct jsonw *w = &s->w;
    double dt = (double)(end - start) / 1e9;
    if (dt <= 0)
        dt = 1e-9;
    if (m->cpu && s->have_cpu && s->ncpu > 0 && m->ncpu == s->ncpu) {
        double sum[6] = {0}; /* nice user system iowait softirq idle, seconds */
        double pct_sum = 0;
        for (size_t i = 0; i < s->ncpu; i++) {
            const struct procfs_cpu *a = &s->cpu_prev[i], *b = &s->cpu_cur[i];
            uint64_t d[8] = {dsub(b->user, a->user),       dsub(b->nice, a->nice),
                             dsub(b->system, a->system),   dsub(b->idle, a->idle),
                             dsub(b->iowait, a->iowait),   dsub(b->irq, a->irq),
                             dsub(b->softirq, a->softirq), dsub(b->steal, a->steal)};
            sum[0] += (double)d[1];
            sum[1] += (double)d[0];
            sum[2] += (double)d[2];
            sum[3] += (double)d[4];
            sum[4] += (double)d[6];
            sum[5] += (double)d[3];
            /* psutil's per-core busy percent: everything but idle and iowait, of all time
             * except guest (already inside user/nice). */
            uint64_t total = 0;
            for (size_t k = 0; k < 8; k++)
                total += d[k];
            double pct = total ? (double)(total - d[3] - d[4]) * 100.0 / (double)total : 0.0;
            pct_sum += pct < 0 ? 0 : pct > 100 ? 100 : pct;
        }
        double rate[6], divisor = 0;
        for (size_t k = 0; k < 6; k++) {
            rate[k] = sum[k] / (double)s->hz / dt;
            divisor += rate[k];
        }
        if (divisor < 1)
            divisor = 1;
        double ncores = (double)s->ncpu;
        struct mpay p;
        mpay_begin(&p, w, &sampler_cpu_type);
        kv_pct(&p, CPU_PCT, pct_sum / ncores);
        static const unsigned stacked[] = {CPU_NICE, CPU_USER, CPU_SYSTEM, CPU_IOWAIT, CPU_SOFTIRQ};
        double acc = 0;
        for (size_t k = 0; k < 5; k++) {
            acc += rate[k] / divisor;
            mpay_double(&p, stacked[k], acc, 3);
        }
        kv_pct(&p, CPU_NICE_PCT, 100.0 * rate[0] / ncores);
        kv_pct(&p, CPU_USER_PCT, 100.0 * rate[1] / ncores);
        kv_pct(&p, CPU_SYSTEM_PCT, 100.0 * rate[2] / ncores);
        kv_pct(&p, CPU_IOWAIT_PCT, 100.0 * rate[3] / ncores);
        kv_pct(&p, CPU_IDLE_PCT, 100.0 * rate[5] / ncores);
        /* the share cpuPercent gives, as a number: what the CPU Use counter draws */
        mpay_double(&p, CPU_BUSY, pct_sum / ncores / 100.0, 4);
        mpay_end(&p);
        emit(s, "CPU Use", start, end);
    }
    if (m->mem) {
        const struct procfs_meminfo *v = &m->mem_v;
        /* psutil's figures: cached includes reclaimable slab; used falls back to total-free. */
        uint64_t cached = v->cached + v->sreclaimable;
        uint64_t used = v->total - MIN(v->total, v->free);
        if (used >= v->buffers + cached)
            used -= v->buffers + cached;
        struct mpay p;
        mpay_begin(&p, w, &sampler_mem_type);
        mpay_uint(&p, MEM_USED, used);
        mpay_uint(&p, MEM_CACHED, cached);
        mpay_uint(&p, MEM_BUFFERS, v->buffers);
        mpay_end(&p);
        emit(s, "Memory", start, end);
    }
    if (m->disk && s->have_disk) {
        const struct procfs_disk_totals *a = &s->disk_prev, *b = &m->disk_v;
        struct mpay p;
        mpay_begin(&p, w, &sampler_io_type);
        mpay_uint(&p, IO_READ_COUNT, dsub(b->reads, a->reads));
        mpay_uint(&p, IO_READ_BYTES, dsub(b->read_sectors, a->read_sectors) * 512);
        mpay_uint(&p, IO_WRITE_COUNT, dsub(b->writes, a->writes));
        mpay_uint(&p, IO_WRITE_BYTES, dsub(b->write_sectors, a->write_sectors) * 512);
        mpay_uint(&p, IO_WRITE_TIME, dsub(b->write_ms, a->write_ms));
        mpay_uint(&p, IO_READ_TIME, dsub(b->read_ms, a->read_ms));
        mpay_end(&p);
        emit(s, "IO", start, end);
    }
    if (m->net && s->have_net) {
        const struct procfs_net_totals *a = &s->net_prev, *b = &m->net_v;
        struct mpay p;
        mpay_begin(&p, w, &sampler_netio_type);
        mpay_uint(&p, NET_RECV_COUNT, dsub(b->recv_packets, a->recv_packets));
        mpay_uint(&p, NET_RECV_BYTES, dsub(b->recv_bytes, a->recv_bytes));
        mpay_uint(&p, NET_SENT_COUNT, dsub(b->sent_packets, a->sent_packets));
        mpay_uint(&p, NET_SENT_BYTES, dsub(b->sent_bytes, a->sent_bytes));
        mpay_end(&p);
        emit(s, "NetIO", start, end);
    }
}

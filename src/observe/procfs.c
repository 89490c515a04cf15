#include "observe/procfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* A cursor over [p, end): every helper checks end before touching a byte. */
struct cur {
    const char *p, *end;
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static void skip_blanks(struct cur *c)
{
    while (c->p < c->end && is_blank(*c->p))
        c->p++;
}

/* Unsigned decimal after optional blanks; saturates. A leading '-' (cutime is a signed long in
 * the kernel, never negative in practice) reads as 0. Returns false without digits. */
static bool take_u64(struct cur *c, uint64_t *ret)
{
    /* On locals: the readers call this for every figure of every sample. */
    const char *p = c->p, *e = c->end;
    while (p < e && is_blank(*p))
        p++;
    bool neg = p < e && *p == '-';
    p += neg;
    unsigned d;
    if (p >= e || (d = (unsigned)(unsigned char)*p - '0') > 9) {
        c->p = p;
        return false;
    }
    uint64_t v = 0;
    /* 19 digits cannot overflow; only longer numbers need the saturating step. */
    const char *fast_end = e - p > 19 ? p + 19 : e;
    do {
        v = v * 10 + d;
        p++;
    } while (p < fast_end && (d = (unsigned)(unsigned char)*p - '0') <= 9);
    while (p < e && (d = (unsigned)(unsigned char)*p - '0') <= 9) {
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
        p++;
    }
    c->p = p;
    *ret = neg ? 0 : v;
    return true;
}

/* Skip one blank-separated token. */
static bool skip_token(struct cur *c)
{
    skip_blanks(c);
    if (c->p >= c->end || *c->p == '\n')
        return false;
    while (c->p < c->end && !is_blank(*c->p) && *c->p != '\n')
        c->p++;
    return true;
}

static void next_line(struct cur *c)
{
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    c->p = nl ? nl + 1 : c->end;
}

static bool starts_with(const struct cur *c, const char *lit, size_t n)
{
    return (size_t)(c->end - c->p) >= n && memcmp(c->p, lit, n) == 0;
}

/* "Key:   123 kB" lines (meminfo, status) and "key 123" lines (cpu.stat) share one walker: for
 * each line, the key is the text before ':' or the first blank, one of names[0..nslots) or
 * none. These files name each key once, so the walk ends when all nslots are filled (meminfo's
 * are in its first 26 of 54 lines, status's in its first 37 of 59). A line whose first byte
 * starts no wanted key is skipped with one memchr: most of meminfo's, read every sample. */
static void parse_kv(const char *buf, size_t len, const char *const *names, uint64_t *slots, unsigned nslots,
                     unsigned *have)
{
    size_t lens[32];
    for (unsigned i = 0; i < nslots; i++)
        lens[i] = strlen(names[i]);
    struct cur c = {buf, buf + len};
    const unsigned all = (1u << nslots) - 1;
    while (c.p < c.end && (*have & all) != all) {
        const char *k = c.p;
        size_t room = (size_t)(c.end - k);
        int slot = -1;
        for (unsigned i = 0; i < nslots && slot < 0; i++)
            if (names[i][0] == k[0] && room > lens[i] && memcmp(names[i], k, lens[i]) == 0 &&
                (k[lens[i]] == ':' || is_blank(k[lens[i]])))
                slot = (int)i;
        uint64_t v;
        if (slot >= 0) {
            c.p = k + lens[slot] + (k[lens[slot]] == ':');
            if (take_u64(&c, &v)) {
                skip_blanks(&c);
                if ((size_t)(c.end - c.p) >= 2 && c.p[0] == 'k' && c.p[1] == 'B')
                    v = v > UINT64_MAX / 1024 ? UINT64_MAX : v * 1024;
                slots[slot] = v;
                *have |= 1u << slot;
            }
        }
        next_line(&c);
    }
}

int procfs_parse_stat(const char *buf, size_t len, struct procfs_cpu *cpus, size_t max,
                      size_t *ret_n)
{
    struct cur c = {buf, buf + len};
    size_t n = 0;
    while (c.p < c.end) {
        /* "cpuN" lines only: the aggregate "cpu " line is not a core. */
        if (starts_with(&c, "cpu", 3) && c.end - c.p > 3 && is_digit(c.p[3])) {
            skip_token(&c);
            uint64_t f[10] = {0};
            for (size_t i = 0; i < 10; i++)
                if (!take_u64(&c, &f[i]))
                    break;
            if (n < max) {
                struct procfs_cpu *o = &cpus[n];
                o->user = f[0];
                o->nice = f[1];
                o->system = f[2];
                o->idle = f[3];
                o->iowait = f[4];
                o->irq = f[5];
                o->softirq = f[6];
                o->steal = f[7];
                o->guest = f[8];
                o->guest_nice = f[9];
            }
            n++;
        } else if (n)
            break; /* the cores' lines are one block; "intr" after them is most of the file */
        next_line(&c);
    }
    if (n == 0)
        return -ENODATA;
    *ret_n = n;
    return 0;
}

static const char *const meminfo_keys[] = {"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached",
              "SReclaimable"};

int procfs_parse_meminfo(const char *buf, size_t len, struct procfs_meminfo *ret)
{
    uint64_t v[6] = {0};
    unsigned have = 0;
    parse_kv(buf, len, meminfo_keys, v, ARRAY_SIZE(v), &have);
    if (!(have & MEMINFO_TOTAL) || !(have & MEMINFO_FREE))
        return -ENODATA;
    *ret = (struct procfs_meminfo){.total = v[0],
                                   .free = v[1],
                                   .available = v[2],
                                   .buffers = v[3],
                                   .cached = v[4],
                                   .sreclaimable = v[5],
                                   .have = have};
    return 0;
}

int procfs_parse_diskstats(const char *buf, size_t len,
                           bool (*is_disk)(const char *name, size_t name_len, void *ctx),
                           void *ctx, struct procfs_disk_totals *ret)
{
    struct procfs_disk_totals t = {0};
    struct cur c = {buf, buf + len};
    while (c.p < c.end) {
        /* major minor name reads merged sectors ms writes merged sectors ms ... */
        uint64_t major, minor, f[8];
        bool ok = take_u64(&c, &major) && take_u64(&c, &minor);
        const char *name = NULL;
        size_t nlen = 0;
        if (ok) {
            skip_blanks(&c);
            name = c.p;
            ok = skip_token(&c);
            nlen = (size_t)(c.p - name);
        }
        /* The name first: most lines are partitions, loop and ram devices, whose figures are
         * not read. */
        ok = ok && (!is_disk || is_disk(name, nlen, ctx));
        for (size_t i = 0; ok && i < 7; i++)
            ok = take_u64(&c, &f[i]);
        if (ok && !take_u64(&c, &f[7])) /* the time writing: a line cut there still counts */
            f[7] = 0;
        if (ok) {
            t.reads = sat_add_u64(t.reads, f[0]);
            t.read_sectors = sat_add_u64(t.read_sectors, f[2]);
            t.read_ms = sat_add_u64(t.read_ms, f[3]);
            t.writes = sat_add_u64(t.writes, f[4]);
            t.write_sectors = sat_add_u64(t.write_sectors, f[6]);
            t.write_ms = sat_add_u64(t.write_ms, f[7]);
            t.ndisks++;
        }
        next_line(&c);
    }
    *ret = t;
    return 0;
}

int procfs_parse_net_dev(const char *buf, size_t len, struct procfs_net_totals *ret)
{
    struct procfs_net_totals t = {0};
    struct cur c = {buf, buf + len};
    while (c.p < c.end) {
        /* "  eth0: rbytes rpackets errs drop fifo frame compressed multicast tbytes tpackets ..."
         * The two header lines have no ':' before the numbers. */
        const char *nl = memchr(c.p, '\n', (size_t)(c.end - c.p));
        const char *eol = nl ? nl : c.end;
        const char *colon = memchr(c.p, ':', (size_t)(eol - c.p));
        if (colon) {
            struct cur l = {colon + 1, eol};
            uint64_t f[10];
            bool ok = true;
            for (size_t i = 0; ok && i < 10; i++)
                ok = take_u64(&l, &f[i]);
            if (ok) {
                t.recv_bytes = sat_add_u64(t.recv_bytes, f[0]);
                t.recv_packets = sat_add_u64(t.recv_packets, f[1]);
                t.sent_bytes = sat_add_u64(t.sent_bytes, f[8]);
                t.sent_packets = sat_add_u64(t.sent_packets, f[9]);
                t.nifaces++;
            }
        }
        c.p = nl ? nl + 1 : c.end;
    }
    *ret = t;
    return 0;
}

int procfs_parse_pid_stat(const char *buf, size_t len, struct procfs_pid_stat *ret)
{
    struct procfs_pid_stat s = {0};
    struct cur c = {buf, buf + len};
    uint64_t v;
    if (!take_u64(&c, &v)) /* (1) pid */
        return -EINVAL;
    s.pid = v > INT32_MAX ? INT32_MAX : (pid_t)v;
    skip_blanks(&c);
    if (c.p >= c.end || *c.p != '(')
        return -EINVAL;
    const char *name = c.p + 1;
    /* (2) comm: the command chooses it, so it may hold ") " itself; the kernel prints no ')'
     * after it, so the last one in the buffer closes it. */
    const char *rparen = c.end > name ? memrchr(name, ')', (size_t)(c.end - name)) : NULL;
    if (!rparen)
        return -EINVAL;
    size_t n = (size_t)(rparen - name);
    if (n >= sizeof s.comm)
        n = sizeof s.comm - 1;
    memcpy(s.comm, name, n);
    s.comm[n] = '\0';
    c.p = rparen + 1;
    skip_blanks(&c);
    if (c.p >= c.end || is_blank(*c.p) || *c.p == '\n') /* (3) state */
        return -EINVAL;
    s.state = *c.p++;
    /* Fields 4..24; f[i] holds field i+4. */
    uint64_t f[21];
    for (size_t i = 0; i < 21; i++)
        if (!take_u64(&c, &f[i]))
            return -EINVAL;
    s.ppid = f[0] > INT32_MAX ? INT32_MAX : (pid_t)f[0]; /* (4) */
    s.flags = f[9 - 4];                                  /* (9) */
    s.majflt = f[12 - 4];                                /* (12) */
    s.cmajflt = f[13 - 4];                               /* (13) */
    s.utime = f[14 - 4];                                 /* (14) */
    s.stime = f[15 - 4];                                 /* (15) */
    s.cutime = f[16 - 4];                                /* (16) */
    s.cstime = f[17 - 4];                                /* (17) */
    s.num_threads = f[20 - 4];                           /* (20) */
    s.starttime = f[22 - 4];                             /* (22) */
    s.rss = f[24 - 4];                                   /* (24) */
    *ret = s;
    return 0;
}

/* Field n (>= 3) of a /proc/<pid>/stat line: false when the line has none. */
static bool pid_stat_field(const char *buf, size_t len, int n, uint64_t *v)
{
    const char *rparen = len ? memrchr(buf, ')', len) : NULL;
    if (!rparen)
        return false;
    struct cur c = {rparen + 1, buf + len};
    for (int field = 3; field < n; field++)
        if (!skip_token(&c))
            return false;
    return take_u64(&c, v);
}

int procfs_pid_stat_cpu(const char *buf, size_t len)
{
    uint64_t v;
    return pid_stat_field(buf, len, 39, &v) && v < 1u << 20 ? (int)v : -1;
}

int procfs_pid_stat_exit_code(const char *buf, size_t len)
{
    uint64_t v;
    return pid_stat_field(buf, len, 52, &v) && v <= 0xffff ? (int)v : -1;
}

int procfs_parse_sched_exec_start(const char *buf, size_t len, uint64_t *ret_ns)
{
    static const char key[] = "se.exec_start";
    struct cur c = {buf, buf + len};
    for (; c.p < c.end; next_line(&c)) {
        if (!starts_with(&c, key, sizeof key - 1))
            continue;
        c.p += sizeof key - 1;
        skip_blanks(&c);
        if (c.p >= c.end || *c.p != ':')
            continue; /* a longer key */
        c.p++;
        /* milliseconds, with six decimals: nanoseconds */
        uint64_t ms, frac = 0;
        if (!take_u64(&c, &ms) || ms > UINT64_MAX / 1000000)
            return -ENOENT;
        unsigned digits = 0;
        if (c.p < c.end && *c.p == '.')
            for (c.p++; c.p < c.end && is_digit(*c.p); c.p++)
                if (digits < 6)
                    frac = frac * 10 + (uint64_t)(*c.p - '0'), digits++;
        for (; digits < 6; digits++)
            frac *= 10;
        *ret_ns = ms * 1000000 + frac;
        return *ret_ns ? 0 : -ENODATA;
    }
    return -ENOENT;
}

static const char *const status_keys[] = {"VmRSS", "VmHWM", "Threads", "PPid"};

int procfs_parse_pid_status(const char *buf, size_t len, struct procfs_pid_status *ret)
{
    uint64_t v[4] = {0};
    unsigned have = 0;
    parse_kv(buf, len, status_keys, v, ARRAY_SIZE(v), &have);
    *ret = (struct procfs_pid_status){.vmrss = v[0],
                                      .vmhwm = v[1],
                                      .threads = v[2],
                                      .ppid = v[3] > INT32_MAX ? INT32_MAX : (pid_t)v[3],
                                      .have = have};
    return 0;
}

static const char *const io_keys[] = {"rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes"};

int procfs_parse_pid_io(const char *buf, size_t len, struct procfs_pid_io *ret)
{
    uint64_t v[5] = {0};
    unsigned have = 0;
    parse_kv(buf, len, io_keys, v, ARRAY_SIZE(v), &have);
    if (!(have & (PIO_READ_BYTES | PIO_WRITE_BYTES)))
        return -ENODATA;
    *ret = (struct procfs_pid_io){.rchar = v[0],
                                  .wchar = v[1],
                                  .read_bytes = v[2],
                                  .write_bytes = v[3],
                                  .cancelled_write_bytes = v[4],
                                  .have = have};
    return 0;
}

static const char *const pss_keys[] = {"Pss"};

int procfs_parse_smaps_pss(const char *buf, size_t len, uint64_t *ret)
{
    uint64_t v[1] = {0};
    unsigned have = 0;
    parse_kv(buf, len, pss_keys, v, ARRAY_SIZE(v), &have);
    if (!have)
        return -ENODATA;
    *ret = v[0];
    return 0;
}

static const char *const cgcpu_keys[] = {"usage_usec", "user_usec", "system_usec"};

int procfs_parse_cg_cpu_stat(const char *buf, size_t len, struct procfs_cg_cpu *ret)
{
    uint64_t v[3] = {0};
    unsigned have = 0;
    parse_kv(buf, len, cgcpu_keys, v, ARRAY_SIZE(v), &have);
    if (!(have & CGCPU_USAGE))
        return -ENODATA;
    *ret = (struct procfs_cg_cpu){
        .usage_usec = v[0], .user_usec = v[1], .system_usec = v[2], .have = have};
    return 0;
}

int procfs_parse_u64(const char *buf, size_t len, uint64_t *ret)
{
    struct cur c = {buf, buf + len};
    uint64_t v;
    if (!take_u64(&c, &v))
        return -EINVAL;
    while (c.p < c.end && (is_blank(*c.p) || *c.p == '\n'))
        c.p++;
    if (c.p != c.end)
        return -EINVAL;
    *ret = v;
    return 0;
}

size_t procfs_format_cmdline(const char *buf, size_t len, char *out, size_t out_max)
{
    while (len > 0 && buf[len - 1] == '\0')
        len--;
    size_t n = len < out_max - 1 ? len : out_max - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = buf[i] == '\0' ? ' ' : buf[i];
    out[n] = '\0';
    return n;
}

/* Lines of buf[0..len) one at a time: "key<ws>: value". */
int procfs_count_cores(const char *buf, size_t len)
{
    long seen[1024][2];
    int count = 0;
    long phys = 0;
    for (const char *line = buf, *end = buf + len; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        const char *colon = memchr(line, ':', (size_t)(le - line));
        size_t klen = (size_t)(le - line);
        if (colon) {
            char num[32];
            size_t vn = MIN((size_t)(le - colon - 1), sizeof num - 1);
            memcpy(num, colon + 1, vn);
            num[vn] = '\0';
            long v = strtol(num, NULL, 10);
            if (klen >= 11 && strncmp(line, "physical id", 11) == 0)
                phys = v;
            else if (klen >= 7 && strncmp(line, "core id", 7) == 0) {
                int i;
                for (i = 0; i < count; i++)
                    if (seen[i][0] == phys && seen[i][1] == v)
                        break;
                if (i == count && count < 1024) {
                    seen[count][0] = phys;
                    seen[count][1] = v;
                    count++;
                }
            }
        }
        line = nl ? nl + 1 : end;
    }
    return count;
}

bool procfs_parse_cpu_list(const char *buf, size_t len, bool (*each)(unsigned cpu, void *ctx), void *ctx)
{
    struct cur c = {buf, buf + len};
    while (c.end > c.p && (c.end[-1] == '\n' || c.end[-1] == ' '))
        c.end--;
    if (c.p == c.end)
        return true; /* an empty list: no CPU */
    /* checked whole first, so that nothing is called for a list that is not one */
    for (int pass = 0; pass < 2; pass++) {
        c.p = buf;
        for (;;) {
            uint64_t lo, hi;
            if (!take_u64(&c, &lo) || lo > 1u << 20)
                return false;
            hi = lo;
            if (c.p < c.end && *c.p == '-') {
                c.p++;
                if (!take_u64(&c, &hi) || hi < lo || hi > 1u << 20)
                    return false;
            }
            for (uint64_t cpu = lo; pass == 1 && cpu <= hi; cpu++)
                if (!each((unsigned)cpu, ctx))
                    return true;
            if (c.p == c.end)
                break;
            if (*c.p != ',')
                return false;
            c.p++;
        }
    }
    return true;
}

/* "N" or "N.DDD", after optional blanks; false without digits. */
static bool take_decimal(struct cur *c, double *ret)
{
    uint64_t whole;
    if (!take_u64(c, &whole))
        return false;
    double v = (double)whole, scale = 0.1;
    if (c->p < c->end && *c->p == '.')
        for (c->p++; c->p < c->end && is_digit(*c->p); c->p++, scale /= 10)
            v += (double)(*c->p - '0') * scale;
    *ret = v;
    return true;
}

/* One "avg10=… avg60=… avg300=… total=…" line's values, up to its end. */
static void psi_fields(struct cur *c, struct procfs_psi_line *ret)
{
    static const char *const keys[] = {"avg10=", "avg60=", "avg300=", "total="};
    while (c->p < c->end && *c->p != '\n') {
        skip_blanks(c);
        size_t k;
        for (k = 0; k < 4; k++) {
            size_t kl = strlen(keys[k]);
            if ((size_t)(c->end - c->p) >= kl && memcmp(c->p, keys[k], kl) == 0) {
                c->p += kl;
                break;
            }
        }
        double d;
        uint64_t u;
        if (k < 3 && take_decimal(c, &d))
            *(k == 0 ? &ret->avg10 : k == 1 ? &ret->avg60 : &ret->avg300) = d;
        else if (k == 3 && take_u64(c, &u))
            ret->total_us = u;
        else /* unknown: skip the word */
            while (c->p < c->end && !is_blank(*c->p) && *c->p != '\n')
                c->p++;
    }
}

int procfs_parse_psi(const char *buf, size_t len, struct procfs_psi *ret)
{
    struct procfs_psi r = {0};
    struct cur c = {buf, buf + len};
    while (c.p < c.end) {
        skip_blanks(&c);
        bool some = (size_t)(c.end - c.p) >= 5 && memcmp(c.p, "some ", 5) == 0;
        bool full = (size_t)(c.end - c.p) >= 5 && memcmp(c.p, "full ", 5) == 0;
        if (some || full) {
            c.p += 5;
            psi_fields(&c, some ? &r.some : &r.full);
            *(some ? &r.have_some : &r.have_full) = true;
        }
        while (c.p < c.end && *c.p != '\n')
            c.p++;
        if (c.p < c.end)
            c.p++;
    }
    if (!r.have_some)
        return -ENODATA;
    *ret = r;
    return 0;
}

/* Fuzz target: every /proc parser on the same bytes (the first byte picks nothing; all run),
 * so one corpus of captured files exercises them all. */
#include "observe/procfs.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool accept_odd(const char *name, size_t n, void *ctx)
{
    (void)ctx;
    return n > 0 && (name[0] & 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct procfs_cpu cpus[4];
    size_t n;
    procfs_parse_stat(buf, size, cpus, 4, &n);
    struct procfs_meminfo m;
    procfs_parse_meminfo(buf, size, &m);
    struct procfs_disk_totals d;
    procfs_parse_diskstats(buf, size, accept_odd, NULL, &d);
    struct procfs_net_totals net;
    procfs_parse_net_dev(buf, size, &net);
    struct procfs_pid_stat ps;
    if (procfs_parse_pid_stat(buf, size, &ps) == 0 && strlen(ps.comm) >= PROCFS_COMM_MAX)
        __builtin_trap();
    struct procfs_pid_status st;
    procfs_parse_pid_status(buf, size, &st);
    struct procfs_pid_io io;
    procfs_parse_pid_io(buf, size, &io);
    uint64_t v;
    procfs_parse_smaps_pss(buf, size, &v);
    procfs_parse_u64(buf, size, &v);
    procfs_parse_sched_exec_start(buf, size, &v);
    if (procfs_pid_stat_cpu(buf, size) < -1)
        __builtin_trap();
    struct procfs_cg_cpu cg;
    procfs_parse_cg_cpu_stat(buf, size, &cg);
    char out[32];
    if (procfs_format_cmdline(buf, size, out, sizeof out) >= sizeof out)
        __builtin_trap();
    return 0;
}

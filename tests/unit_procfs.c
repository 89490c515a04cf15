/* Unit tests of the /proc parsers on files captured from a real machine and on hand-made edge
 * cases (hostile command names, missing fields, truncated input). */
#include "observe/procfs.h"

#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fixture_buf[1 << 16];

static size_t fixture(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/proc/%s", SRCDIR, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_msg(fd >= 0, "cannot open %s", path);
    ssize_t n = read(fd, fixture_buf, sizeof fixture_buf);
    ck_assert_int_ge(n, 0);
    close(fd);
    return (size_t)n;
}

/* A heap copy of exactly len bytes, so ASan catches any read past the end. */
static char *exact(const char *s, size_t len)
{
    char *p = malloc(len ? len : 1);
    memcpy(p, s, len);
    return p;
}

START_TEST(test_stat_percpu)
{
    size_t len = fixture("stat");
    struct procfs_cpu cpus[8];
    size_t n = 0;
    ck_assert_int_eq(procfs_parse_stat(fixture_buf, len, cpus, 8, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(cpus[0].user, 1932);
    ck_assert_uint_eq(cpus[0].system, 2272);
    ck_assert_uint_eq(cpus[0].idle, 73385);
    ck_assert_uint_eq(cpus[1].iowait, 442);
    ck_assert_uint_eq(cpus[1].softirq, 85);
    /* more CPUs than room: counted, not stored */
    ck_assert_int_eq(procfs_parse_stat(fixture_buf, len, cpus, 1, &n), 0);
    ck_assert_uint_eq(n, 2);
    const char *old = "cpu  1 2 3 4\ncpu0 1 2 3 4\n";
    ck_assert_int_eq(procfs_parse_stat(old, strlen(old), cpus, 8, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(cpus[0].idle, 4);
    ck_assert_uint_eq(cpus[0].iowait, 0);
    ck_assert_int_eq(procfs_parse_stat("cpu 1 2 3\n", 10, cpus, 8, &n), -ENODATA);
    /* the cores are one block: reading ends at the first line after it */
    const char *after = "cpu  2 2 2 2\ncpu0 1 1 1 1\ncpu1 1 1 1 1\nintr 5 6 7\ncpu2 9 9 9 9\n";
    ck_assert_int_eq(procfs_parse_stat(after, strlen(after), cpus, 8, &n), 0);
    ck_assert_uint_eq(n, 2);
}
END_TEST

START_TEST(test_meminfo)
{
    size_t len = fixture("meminfo");
    struct procfs_meminfo m;
    ck_assert_int_eq(procfs_parse_meminfo(fixture_buf, len, &m), 0);
    ck_assert_uint_eq(m.total, 24683548ull * 1024);
    ck_assert_uint_eq(m.free, 24487724ull * 1024);
    ck_assert_uint_eq(m.buffers, 900ull * 1024);
    ck_assert_uint_eq(m.cached, 56860ull * 1024);
    ck_assert_uint_eq(m.sreclaimable, 55520ull * 1024);
    ck_assert(m.have & MEMINFO_AVAILABLE);
    len = fixture("meminfo_old");
    ck_assert_int_eq(procfs_parse_meminfo(fixture_buf, len, &m), 0);
    ck_assert(!(m.have & MEMINFO_SRECLAIMABLE));
    ck_assert_uint_eq(m.cached, 200 * 1024);
    ck_assert_int_eq(procfs_parse_meminfo("MemTotal: 5 kB\n", 15, &m), -ENODATA);
    /* keys in any order, each found wherever it is */
    const char *mixed = "SReclaimable: 6 kB\nFoo: 1 kB\nCached: 5 kB\nMemFree: 2 kB\nBuffers: 4 kB\n"
                        "MemAvailable: 3 kB\nMemTotal: 1 kB\n";
    ck_assert_int_eq(procfs_parse_meminfo(mixed, strlen(mixed), &m), 0);
    ck_assert_uint_eq(m.total, 1024);
    ck_assert_uint_eq(m.sreclaimable, 6 * 1024);
    ck_assert_uint_eq(m.available, 3 * 1024);
    /* a key is whole: one a wanted key begins (or that begins one) is another key; a key ends
     * at ':' or a blank; the last line may lack its newline */
    const char *near = "MemTotalX: 9 kB\nMemTotal: 7 kB\nMemFre: 9 kB\nCache: 9\nMemFree 8\nCached: 5";
    ck_assert_int_eq(procfs_parse_meminfo(near, strlen(near), &m), 0);
    ck_assert_uint_eq(m.total, 7 * 1024);
    ck_assert_uint_eq(m.free, 8);
    ck_assert_uint_eq(m.cached, 5);
    ck_assert(!(m.have & MEMINFO_BUFFERS));
    ck_assert_int_eq(procfs_parse_meminfo("M", 1, &m), -ENODATA);
}
END_TEST

static bool only_vda(const char *name, size_t n, void *ctx)
{
    (void)ctx;
    return n == 3 && memcmp(name, "vda", 3) == 0;
}

START_TEST(test_diskstats)
{
    size_t len = fixture("diskstats");
    struct procfs_disk_totals t;
    ck_assert_int_eq(procfs_parse_diskstats(fixture_buf, len, only_vda, NULL, &t), 0);
    ck_assert_uint_eq(t.ndisks, 1);
    ck_assert_uint_eq(t.reads, 35520);
    ck_assert_uint_eq(t.read_sectors, 3143626);
    ck_assert_uint_eq(t.writes, 3652);
    ck_assert_uint_eq(t.write_sectors, 416256);
    ck_assert_uint_eq(t.read_ms, 12574);
    ck_assert_uint_eq(t.write_ms, 1544);
    ck_assert_int_eq(procfs_parse_diskstats(fixture_buf, len, NULL, NULL, &t), 0);
    ck_assert_uint_eq(t.ndisks, 10);
    /* a device the filter leaves out is not read past its name */
    const char *skipped = " 7 0 loop0 x y\n 253 0 vda 1 2 3 4 5 6 7 8\n";
    ck_assert_int_eq(procfs_parse_diskstats(skipped, strlen(skipped), only_vda, NULL, &t), 0);
    ck_assert_uint_eq(t.ndisks, 1);
    ck_assert_uint_eq(t.write_ms, 8);
    const char *bad = " 8 0 sda 1 2\n 8 1 sda1 1 2 3 4 5 6 7\n";
    ck_assert_int_eq(procfs_parse_diskstats(bad, strlen(bad), NULL, NULL, &t), 0);
    ck_assert_uint_eq(t.ndisks, 1);
    ck_assert_uint_eq(t.write_sectors, 7);
    ck_assert_uint_eq(t.read_ms, 4);
    ck_assert_uint_eq(t.write_ms, 0);
}
END_TEST

START_TEST(test_net_dev)
{
    size_t len = fixture("net_dev");
    struct procfs_net_totals t;
    ck_assert_int_eq(procfs_parse_net_dev(fixture_buf, len, &t), 0);
    ck_assert_uint_eq(t.nifaces, 4);
    ck_assert_uint_eq(t.recv_bytes, 3367 + 19645857);
    ck_assert_uint_eq(t.recv_packets, 31 + 801);
    ck_assert_uint_eq(t.sent_bytes, 3367 + 51377);
    ck_assert_uint_eq(t.sent_packets, 31 + 692);
}
END_TEST

START_TEST(test_stat_cpu_and_sched)
{
    /* field 39, after a name holding ") " and blanks */
    static const char stat[] = "4242 (evil) (x) S 1 2 ) S 17 1 4242 0 -1 4194304 100 0 0 0 25 7 3 1 20 0 2 0 98765 "
                               "1000000 321 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    ck_assert_int_eq(procfs_pid_stat_cpu(stat, sizeof stat - 1), 1);
    size_t len = fixture("pid_stat");
    ck_assert_int_eq(procfs_pid_stat_cpu(fixture_buf, len), 0);
    len = fixture("pid_stat_truncated");
    ck_assert_int_eq(procfs_pid_stat_cpu(fixture_buf, len), -1);
    ck_assert_int_eq(procfs_pid_stat_cpu("", 0), -1);

    /* a real task's sched file: milliseconds with six decimals, as nanoseconds */
    uint64_t ns = 0;
    len = fixture("task_sched");
    ck_assert_int_eq(procfs_parse_sched_exec_start(fixture_buf, len, &ns), 0);
    ck_assert_uint_eq(ns, 32375471802583ull);
    static const char longer[] = "se.exec_start_x : 5.0\nse.exec_start  :  12.5\n";
    ck_assert_int_eq(procfs_parse_sched_exec_start(longer, sizeof longer - 1, &ns), 0);
    ck_assert_uint_eq(ns, 12500000ull);
    /* moved to another CPU while not running: the time is lost, not 0 */
    static const char moved[] = "se.exec_start  :  0.000000\n";
    ck_assert_int_eq(procfs_parse_sched_exec_start(moved, sizeof moved - 1, &ns), -ENODATA);
    static const char none[] = "se.vruntime : 1.0\n";
    ck_assert_int_eq(procfs_parse_sched_exec_start(none, sizeof none - 1, &ns), -ENOENT);
}
END_TEST

static bool collect(unsigned cpu, void *ctx)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 64 - n, "%u ", cpu);
    return cpu != 99; /* 99 ends the walk */
}

START_TEST(test_cpu_list)
{
    char out[64] = "";
    static const char list[] = "0-3,8,10-11\n";
    ck_assert(procfs_parse_cpu_list(list, sizeof list - 1, collect, out));
    ck_assert_str_eq(out, "0 1 2 3 8 10 11 ");
    out[0] = '\0';
    ck_assert(procfs_parse_cpu_list("5\n", 2, collect, out));
    ck_assert_str_eq(out, "5 ");
    out[0] = '\0';
    ck_assert(procfs_parse_cpu_list("98-120", 6, collect, out)); /* stopped by the callback */
    ck_assert_str_eq(out, "98 99 ");
    out[0] = '\0';
    ck_assert(procfs_parse_cpu_list("\n", 1, collect, out)); /* no CPU */
    ck_assert_str_eq(out, "");
    /* not lists: nothing is called */
    ck_assert(!procfs_parse_cpu_list("0-3,x", 5, collect, out));
    ck_assert(!procfs_parse_cpu_list("3-1", 3, collect, out));
    ck_assert(!procfs_parse_cpu_list("1,,2", 4, collect, out));
    ck_assert(!procfs_parse_cpu_list("0 1", 3, collect, out));
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_pid_stat)
{
    struct procfs_pid_stat s;
    size_t len = fixture("pid_stat");
    ck_assert_int_eq(procfs_parse_pid_stat(fixture_buf, len, &s), 0);
    ck_assert_int_eq(s.pid, 9514);
    ck_assert_str_eq(s.comm, "cat");
    ck_assert_int_eq(s.state, 'R');
    ck_assert_int_eq(s.ppid, 9503);
    ck_assert_uint_eq(s.flags, 4194304); /* after the "-1" of field 8: signed fields parse too */
    ck_assert(!(s.flags & PROC_PF_EXITING));
    ck_assert_uint_eq(s.num_threads, 1);
    ck_assert_uint_eq(s.starttime, 77840);
    ck_assert_uint_eq(s.rss, 416);

    len = fixture("pid_stat_evil");
    char *e = exact(fixture_buf, len);
    ck_assert_int_eq(procfs_parse_pid_stat(e, len, &s), 0);
    free(e);
    ck_assert_str_eq(s.comm, "evil) (x) S 1 2 ");
    ck_assert_int_eq(s.state, 'R');
    ck_assert_int_eq(s.ppid, 17);
    ck_assert_uint_eq(s.utime, 25);
    ck_assert_uint_eq(s.stime, 7);
    ck_assert_uint_eq(s.cutime, 3);
    ck_assert_uint_eq(s.cstime, 1);
    ck_assert_uint_eq(s.num_threads, 2);
    ck_assert_uint_eq(s.starttime, 98765);
    ck_assert_uint_eq(s.rss, 321);

    len = fixture("pid_stat_zombie");
    ck_assert_int_eq(procfs_parse_pid_stat(fixture_buf, len, &s), 0);
    ck_assert_int_eq(s.state, 'Z');
    ck_assert(s.flags & PROC_PF_EXITING);
    ck_assert_uint_eq(s.rss, 0);
    len = fixture("pid_stat_kthread");
    ck_assert_int_eq(procfs_parse_pid_stat(fixture_buf, len, &s), 0);
    ck_assert_str_eq(s.comm, "kthreadd");
    ck_assert_int_eq(s.ppid, 0);

    len = fixture("pid_stat_truncated");
    e = exact(fixture_buf, len);
    ck_assert_int_eq(procfs_parse_pid_stat(e, len, &s), -EINVAL);
    free(e);
    /* every prefix of a valid line: never a crash, success only once field 24 is complete */
    len = fixture("pid_stat");
    for (size_t i = 0; i < len; i++) {
        e = exact(fixture_buf, i);
        int r = procfs_parse_pid_stat(e, i, &s);
        free(e);
        if (i < 60)
            ck_assert_int_eq(r, -EINVAL);
    }
    ck_assert_int_eq(procfs_parse_pid_stat("1 (x", 4, &s), -EINVAL);
    ck_assert_int_eq(procfs_parse_pid_stat("", 0, &s), -EINVAL);
    /* a comm longer than the field is cut, the rest still parses */
    char big[400];
    int n = snprintf(big, sizeof big, "7 (%0200d) S 3 0 0 0 0 0 0 0 0 0 5 6 0 0 0 0 1 0 9 0 11\n", 0);
    ck_assert_int_eq(procfs_parse_pid_stat(big, (size_t)n, &s), 0);
    ck_assert_uint_eq(strlen(s.comm), PROCFS_COMM_MAX - 1);
    ck_assert_uint_eq(s.utime, 5);
    ck_assert_uint_eq(s.rss, 11);
    /* major faults: a shell's own (12) and its waited-for children's (13), read from a real one */
    len = fixture("pid_stat_faults");
    ck_assert_int_eq(procfs_parse_pid_stat(fixture_buf, len, &s), 0);
    ck_assert_uint_eq(s.majflt, 0);
    ck_assert_uint_eq(s.cmajflt, 6329);
    ck_assert_uint_eq(s.utime, 51);
}
END_TEST

START_TEST(test_psi)
{
    struct procfs_psi p;
    size_t len = fixture("psi_io"); /* this machine's /proc/pressure/io */
    ck_assert_int_eq(procfs_parse_psi(fixture_buf, len, &p), 0);
    ck_assert(p.have_some && p.have_full);
    ck_assert_double_eq_tol(p.some.avg10, 0.26, 1e-9);
    ck_assert_double_eq_tol(p.some.avg60, 0.13, 1e-9);
    ck_assert_double_eq_tol(p.full.avg300, 0.07, 1e-9);
    ck_assert_uint_eq(p.some.total_us, 15898203);
    ck_assert_uint_eq(p.full.total_us, 12905713);
    /* a kernel before 5.13 writes no "full" line for the machine's cpu */
    len = fixture("psi_cpu_old");
    ck_assert_int_eq(procfs_parse_psi(fixture_buf, len, &p), 0);
    ck_assert(p.have_some && !p.have_full);
    ck_assert_double_eq_tol(p.some.avg10, 41.07, 1e-9);
    ck_assert_uint_eq(p.some.total_us, 987654321);
    /* unknown keys are skipped; no "some": no data; every prefix parses without a crash */
    const char odd[] = "some avg10=1.50 future=7 avg60=2 total=9\n";
    ck_assert_int_eq(procfs_parse_psi(odd, sizeof odd - 1, &p), 0);
    ck_assert_double_eq_tol(p.some.avg60, 2.0, 1e-9);
    ck_assert_uint_eq(p.some.total_us, 9);
    ck_assert_int_eq(procfs_parse_psi("full avg10=1 total=3\n", 21, &p), -ENODATA);
    ck_assert_int_eq(procfs_parse_psi("", 0, &p), -ENODATA);
    len = fixture("psi_io");
    for (size_t i = 0; i < len; i++) {
        char *e = exact(fixture_buf, i);
        int r = procfs_parse_psi(e, i, &p);
        free(e);
        ck_assert_int_eq(r, i < 5 ? -ENODATA : 0);
    }
}
END_TEST

START_TEST(test_pid_status)
{
    struct procfs_pid_status st;
    size_t len = fixture("pid_status");
    ck_assert_int_eq(procfs_parse_pid_status(fixture_buf, len, &st), 0);
    ck_assert_uint_eq(st.have, PSTATUS_VMRSS | PSTATUS_VMHWM | PSTATUS_THREADS | PSTATUS_PPID);
    ck_assert_uint_eq(st.vmrss, 1768 * 1024);
    ck_assert_uint_eq(st.vmhwm, 1768 * 1024);
    ck_assert_int_eq(st.ppid, 9503);
    len = fixture("pid_status_zombie");
    ck_assert_int_eq(procfs_parse_pid_status(fixture_buf, len, &st), 0);
    ck_assert(!(st.have & (PSTATUS_VMRSS | PSTATUS_VMHWM)));
    ck_assert(st.have & PSTATUS_THREADS);
    len = fixture("pid_status_kthread");
    ck_assert_int_eq(procfs_parse_pid_status(fixture_buf, len, &st), 0);
    ck_assert(!(st.have & PSTATUS_VMRSS));
    ck_assert_int_eq(st.ppid, 0);
    len = fixture("pid_status_partial");
    ck_assert_int_eq(procfs_parse_pid_status(fixture_buf, len, &st), 0);
    ck_assert_uint_eq(st.have, PSTATUS_VMHWM | PSTATUS_THREADS);
    ck_assert_uint_eq(st.vmhwm, 2048 * 1024);
    ck_assert_uint_eq(st.threads, 3);
}
END_TEST

START_TEST(test_pid_io)
{
    struct procfs_pid_io io;
    size_t len = fixture("pid_io_full");
    ck_assert_int_eq(procfs_parse_pid_io(fixture_buf, len, &io), 0);
    ck_assert_uint_eq(io.rchar, 10);
    ck_assert_uint_eq(io.wchar, 20);
    ck_assert_uint_eq(io.read_bytes, 4096);
    ck_assert_uint_eq(io.write_bytes, 8192);
    len = fixture("pid_io");
    ck_assert_int_eq(procfs_parse_pid_io(fixture_buf, len, &io), 0);
    ck_assert_uint_eq(io.rchar, 6976);
    ck_assert_int_eq(procfs_parse_pid_io("rchar: 1\n", 9, &io), -ENODATA);
    ck_assert_int_eq(procfs_parse_pid_io("", 0, &io), -ENODATA);
}
END_TEST

START_TEST(test_pss_cgroup_u64)
{
    uint64_t v;
    size_t len = fixture("smaps_rollup");
    ck_assert_int_eq(procfs_parse_smaps_pss(fixture_buf, len, &v), 0);
    ck_assert_uint_eq(v, 453 * 1024);
    ck_assert_int_eq(procfs_parse_smaps_pss("Pss_Anon: 5 kB\n", 15, &v), -ENODATA);
    struct procfs_cg_cpu cg;
    len = fixture("cg_cpu.stat");
    ck_assert_int_eq(procfs_parse_cg_cpu_stat(fixture_buf, len, &cg), 0);
    ck_assert_uint_eq(cg.usage_usec, 107132000);
    ck_assert_uint_eq(cg.user_usec, 51892000);
    ck_assert_uint_eq(cg.system_usec, 55240000);
    ck_assert_int_eq(procfs_parse_cg_cpu_stat("nr_periods 0\n", 13, &cg), -ENODATA);
    ck_assert_int_eq(procfs_parse_u64("123456\n", 7, &v), 0);
    ck_assert_uint_eq(v, 123456);
    ck_assert_int_eq(procfs_parse_u64("max\n", 4, &v), -EINVAL);
    ck_assert_int_eq(procfs_parse_u64("12x", 3, &v), -EINVAL);
    ck_assert_int_eq(procfs_parse_u64("99999999999999999999999", 23, &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    /* 19 digits are read without the saturating step, the 20th with it */
    ck_assert_int_eq(procfs_parse_u64("9999999999999999999", 19, &v), 0);
    ck_assert_uint_eq(v, 9999999999999999999ULL);
    ck_assert_int_eq(procfs_parse_u64("18446744073709551615", 20, &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert_int_eq(procfs_parse_u64("18446744073709551614", 20, &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX - 1);
    ck_assert_int_eq(procfs_parse_u64("18446744073709551616", 20, &v), 0);
    ck_assert_uint_eq(v, UINT64_MAX);
}
END_TEST

START_TEST(test_cmdline)
{
    char out[16];
    size_t len = fixture("cmdline");
    ck_assert_uint_eq(procfs_format_cmdline(fixture_buf, len, out, sizeof out), 15);
    ck_assert_str_eq(out, "python3 -c prin");
    char big[64];
    ck_assert_uint_eq(procfs_format_cmdline(fixture_buf, len, big, sizeof big), 19);
    ck_assert_str_eq(big, "python3 -c print(1)");
    ck_assert_uint_eq(procfs_format_cmdline("\0\0", 2, out, sizeof out), 0);
    ck_assert_str_eq(out, "");
    ck_assert_uint_eq(procfs_format_cmdline("abc", 3, out, 1), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("procfs");
    TCase *tc = tcase_create("parsers");
    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_stat_percpu);
    tcase_add_test(tc, test_cpu_list);
    tcase_add_test(tc, test_meminfo);
    tcase_add_test(tc, test_diskstats);
    tcase_add_test(tc, test_net_dev);
    tcase_add_test(tc, test_pid_stat);
    tcase_add_test(tc, test_pid_status);
    tcase_add_test(tc, test_pid_io);
    tcase_add_test(tc, test_pss_cgroup_u64);
    tcase_add_test(tc, test_cmdline);
    tcase_add_test(tc, test_stat_cpu_and_sched);
    tcase_add_test(tc, test_psi);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}

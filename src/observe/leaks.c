/* leaks.c — see leaks.h. */
#include "observe/leaks.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "observe/forensics.h"
#include "observe/procfs.h"

/* pid's /proc/PID/stat into *st: 0, or -1 when it cannot be read (gone). */
static int stat_of(pid_t pid, struct procfs_pid_stat *st)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    ssize_t k = read_file_at(AT_FDCWD, path, buf, sizeof buf);
    return k < 0 || procfs_parse_pid_stat(buf, (size_t)k, st) < 0 ? -1 : 0;
}

/* The go tool (named go, its build information says cmd/go: forensics_runtime_of). */
static bool is_go_tool(const struct procfs_pid_stat *st)
{
    int sig = -1;
    return strcmp(st->comm, "go") == 0 && forensics_runtime_of(st->pid, FORENSICS_RT_GO, &sig) && sig == 0;
}

/* A step of the go tool's own (compile, vet, link, cgo, another package's test binary, and what
 * they run), not a test's: its line of ancestors reaches the go tool through a child of the tool
 * that started during the test too (procs[0..n)). A test's test binary started before the test. */
static bool tool_step(const struct procfs_pid_stat *st, const struct sampler_proc *procs, size_t n)
{
    struct procfs_pid_stat child = *st, up;
    for (int depth = 0; depth < 64 && child.ppid > 1 && stat_of(child.ppid, &up) == 0; depth++, child = up)
        if (is_go_tool(&up)) {
            for (size_t i = 0; i < n; i++)
                if (procs[i].pid == child.pid && procs[i].starttime == child.starttime)
                    return true;
            return false;
        }
    return false;
}

size_t leaks_probe(struct leaks *l, const struct sampler *s, pid_t command, const char *test, uint64_t since_ns,
                   char *cmds, size_t cap)
{
    cmds[0] = '\0';
    if (!s)
        return 0;
    struct sampler_proc procs[LEAK_CANDIDATES];
    size_t n = MIN(sampler_started_since(s, since_ns, procs, LEAK_CANDIDATES), (size_t)LEAK_CANDIDATES);
    size_t alive = 0, len = 0;
    for (size_t i = 0; i < n; i++) {
        struct procfs_pid_stat st;
        if (procs[i].pid == command || stat_of(procs[i].pid, &st) < 0 || st.state == 'Z' ||
            st.starttime != procs[i].starttime || tool_step(&st, procs, n))
            continue;
        alive++;
        const char *cmd = procs[i].cmd ? procs[i].cmd : procs[i].comm;
        int w = snprintf(cmds + len, cap - len, "%s%s", len ? "; " : "", cmd);
        len = w < 0 ? len : MIN(len + (size_t)w, cap - 1);
        struct leak *k = &l->kept[l->n++ % LEAKS_KEPT];
        free(k->test);
        *k = (struct leak){procs[i].pid, procs[i].starttime, strdup(test)};
    }
    return alive;
}

const char *leaks_test_of(const struct leaks *l, pid_t pid)
{
    struct procfs_pid_stat st;
    if (stat_of(pid, &st) < 0)
        return NULL;
    for (size_t i = MIN(l->n, (size_t)LEAKS_KEPT); i-- > 0;)
        if (l->kept[i].pid == pid && l->kept[i].starttime == st.starttime)
            return l->kept[i].test;
    return NULL;
}

void leaks_release(struct leaks *l)
{
    for (size_t i = 0; i < MIN(l->n, (size_t)LEAKS_KEPT); i++)
        free(l->kept[i].test);
    l->n = 0;
}

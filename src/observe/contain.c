/* contain.c — see contain.h. */
#include "observe/contain.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "base/util.h"
#include "observe/procfs.h"

enum { V1_MEMORY, V1_PIDS, V1_COUNT };

struct contain {
    enum contain_tier tier;
    pid_t self;
    pid_t root; /* the command; its process group has the same id */
    bool root_reaped; /* the id may name another group now (group_ours) */
    /* cgroup tier */
    char *cg_path;  /* absolute directory of our leaf */
    int cg_dirfd;   /* O_PATH of the leaf */
    int cg_procs_w; /* cgroup.procs opened for writing before the fork (child joins through it) */
    /* children we had before the command started (a caller's `sleep & exec resmon-run`): not
     * part of the tree */
    pid_t *foreign;
    size_t n_foreign;
    bool children_files; /* /proc/PID/task/TID/children exists (CONFIG_PROC_CHILDREN) */
    /* cgroup.procs text, reused between listings */
    char *buf;
    size_t buf_cap;
    int cg_events; /* cgroup.events, polled for POLLPRI (contain_watch) */
    /* cgroup v1 leaves that enforce limits (contain_set_limits) */
    struct v1_leaf {
        int dirfd, procs_w;
        char *path;
    } v1[2];
    int *watch_fds;
    size_t n_watch;
};

/* ---- finding a writable cgroup2 hierarchy ---------------------------------------------------- */

/* Unescape the octal \NNN sequences mountinfo uses for spaces and the like, in place. */
static void unescape_octal(char *s)
{
    char *o = s;
    for (char *p = s; *p;) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
            p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 4;
        } else
            *o++ = *p++;
    }
    *o = '\0';
}

/* A mountinfo line, "<id> <parent> <maj:min> <root> <mountpoint> <options> [optional fields...]
 * - <fstype> <source> <super options>", up to its separator sep: the mount point (unescaped, in
 * place), or NULL when the mount's root within its file system is not "/" (the path arithmetic
 * of the callers needs the whole hierarchy). */
static char *mount_point(char *line, const char *sep)
{
    char *f[5], *p = line;
    int i;
    for (i = 0; i < 5 && p < sep; i++) {
        f[i] = p;
        char *sp = strchr(p, ' ');
        if (!sp)
            break;
        *sp = '\0';
        p = sp + 1;
    }
    if (i < 5 || strcmp(f[3], "/") != 0)
        return NULL;
    unescape_octal(f[4]);
    return f[4];
}

/* The cgroup2 mount point, from /proc/self/mountinfo. */
static int find_cgroup2_mount(char *ret, size_t size)
{
    char *buf = malloc(65536);
    if (!buf)
        return -ENOMEM;
    ssize_t n = read_file_at(AT_FDCWD, "/proc/self/mountinfo", buf, 65536);
    if (n < 0) {
        free(buf);
        return (int)n;
    }
    int r = -ENOENT;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
            continue;
        char *mp = mount_point(line, sep);
        if (!mp || strlen(mp) + 1 > size)
            continue;
        strcpy(ret, mp);
        r = 0;
        break;
    }
    free(buf);
    return r;
}

/* Our own cgroup within the v2 hierarchy: the "0::<path>" line of /proc/self/cgroup. */
static int find_own_cgroup(char *ret, size_t size)
{
    char buf[8192];
    ssize_t n = read_file_at(AT_FDCWD, "/proc/self/cgroup", buf, sizeof buf);
    if (n < 0)
        return (int)n;
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "0::", 3) == 0) {
            const char *path = line + 3;
            /* " (deleted)" would mean our cgroup is gone: useless. */
            if (strstr(path, " (deleted)") || strlen(path) + 1 > size)
                return -ENOENT;
            strcpy(ret, path);
            return 0;
        }
        line = nl ? nl + 1 : NULL;
    }
    return -ENOENT;
}

/* The start time of pid (proc(5) field 22, clock ticks after boot): with the pid, a process's
 * identity. 0 when it is gone. */
static unsigned long long start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    ssize_t n = read_file_at(AT_FDCWD, path, buf, sizeof buf);
    struct procfs_pid_stat st;
    return n > 0 && procfs_parse_pid_stat(buf, (size_t)n, &st) == 0 ? st.starttime : 0;
}

/* A leaf is not taken for stale before its owner has run this long: until the command is in it,
 * a leaf is empty, and its owner may be a run in another PID namespace, whose pid names another
 * process here or none (runs in and out of a container sharing a cgroup would remove each other's
 * leaves while they are set up). */
#define STALE_AFTER_S 60

/* A run killed outright (SIGKILL) cannot remove its leaf. Tidy up such leaves beside ours: empty
 * ones whose owner is gone. The leaf names its owner by pid and start time, so a pid that lives
 * on under another process (PID 1 of a container that restarted) does not keep a leaf forever;
 * the start time also says how long ago the owner started (clock ticks after boot, the same
 * clock in every PID namespace). Best effort. */
static void remove_stale_leaves(const char *parent)
{
    char up[64];
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0 || read_file_at(AT_FDCWD, "/proc/uptime", up, sizeof up) <= 0)
        return;
    double now_ticks = strtod(up, NULL) * (double)hz;
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        unsigned long long start;
        if (strncmp(e->d_name, "resmon-run.", 11) != 0 || sscanf(e->d_name + 11, "%d.%llu", &pid, &start) != 2 ||
            pid <= 0)
            continue;
        if ((double)start + STALE_AFTER_S * (double)hz > now_ticks || start_time(pid) == start)
            continue;
        /* rmdir fails with EBUSY while processes are inside: exactly the guard wanted. */
        unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

static int cgroup_setup(struct contain *c)
{
    char mnt[PATH_MAX], own[PATH_MAX], path[PATH_MAX];
    int r = find_cgroup2_mount(mnt, sizeof mnt);
    if (r < 0)
        return r;
    r = find_own_cgroup(own, sizeof own);
    if (r < 0)
        return r;
    /* A leaf beside nothing else of ours, named by its owner's pid and start time: a stale
     * directory of a killed earlier run with the same pid is not reused, and is known as stale. */
    int n = snprintf(path, sizeof path, "%s%s%sresmon-run.%d.%llu", mnt, strcmp(own, "/") ? own : "", "/",
                     (int)c->self, start_time(c->self));
    if (n < 0 || (size_t)n >= sizeof path)
        return -ENAMETOOLONG;
    char *slash = strrchr(path, '/');
    *slash = '\0';
    remove_stale_leaves(path);
    *slash = '/';
    if (mkdir(path, 0755) < 0)
        return -errno;
    c->cg_dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (c->cg_dirfd < 0) {
        r = -errno;
        rmdir(path);
        return r;
    }
    c->cg_procs_w = openat(c->cg_dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (c->cg_procs_w < 0) {
        r = -errno;
        goto fail;
    }
    /* cgroup.kill (5.14) is what makes the kill race-free; without it, fall back. */
    if (faccessat(c->cg_dirfd, "cgroup.kill", W_OK, 0) < 0) {
        r = -EOPNOTSUPP;
        goto fail;
    }
    c->cg_path = strdup(path);
    if (!c->cg_path) {
        r = -ENOMEM;
        goto fail;
    }
    return 0;
fail:
    if (c->cg_procs_w >= 0)
        close(c->cg_procs_w);
    close(c->cg_dirfd);
    c->cg_procs_w = c->cg_dirfd = -1;
    rmdir(path);
    return r;
}

static int stat_ppid(int procfd, const char *name, pid_t *ret_ppid, char *ret_state);
static int push_pid(pid_t **v, size_t *n, size_t *cap, pid_t pid);

static int children_of(struct contain *c, int procfd, pid_t pid, pid_t **v, size_t *n, size_t *cap);

/* The children we had before the command (an exec'd shell's): never members. Read from our own
 * children lists where the kernel has them, else by walking every process's parent link. */
static void record_foreign_children(struct contain *c)
{
    char probe[64];
    snprintf(probe, sizeof probe, "/proc/%d/task/%d/children", (int)c->self, (int)c->self);
    c->children_files = access(probe, R_OK) == 0;
    if (c->children_files) {
        int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        size_t cap = 0;
        if (procfd >= 0) {
            (void)children_of(c, procfd, c->self, &c->foreign, &c->n_foreign, &cap);
            close(procfd);
        }
        return;
    }
    DIR *d = opendir("/proc");
    if (!d)
        return;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid_t ppid;
        char state;
        if (stat_ppid(dirfd(d), e->d_name, &ppid, &state) == 0 && ppid == c->self)
            push_pid(&c->foreign, &c->n_foreign, &cap, (pid_t)atoi(e->d_name));
    }
    closedir(d);
}

static bool is_foreign(const struct contain *c, pid_t pid)
{
    for (size_t i = 0; i < c->n_foreign; i++)
        if (c->foreign[i] == pid)
            return true;
    return false;
}

void contain_add_foreign(struct contain *c, pid_t pid)
{
    size_t cap = c->n_foreign; /* push_pid grows by doubling from any size */
    push_pid(&c->foreign, &c->n_foreign, &cap, pid);
}

bool contain_reaped(struct contain *c, pid_t pid)
{
    if (pid == c->root)
        c->root_reaped = true;
    for (size_t i = 0; i < c->n_foreign; i++)
        if (c->foreign[i] == pid) {
            c->foreign[i] = c->foreign[--c->n_foreign];
            return true;
        }
    return false;
}

int contain_new(enum contain_mode mode, struct contain **ret, const char **ret_why)
{
    struct contain *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->self = getpid();
    c->cg_dirfd = c->cg_procs_w = c->cg_events = -1;
    for (int i = 0; i < V1_COUNT; i++)
        c->v1[i].dirfd = c->v1[i].procs_w = -1;
    if (ret_why)
        *ret_why = NULL;
    /* Orphans re-parent to us in every tier, so every exit in the tree is reaped by someone we
     * can see, and the subreaper tier can find them by parent links. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        int r = -errno;
        free(c);
        return r;
    }
    c->tier = CONTAIN_SUBREAPER;
    record_foreign_children(c);
    if (mode != CONTAIN_MODE_SUBREAPER) {
        int r = cgroup_setup(c);
        if (r >= 0)
            c->tier = CONTAIN_CGROUP;
        else if (mode == CONTAIN_MODE_CGROUP) {
            free(c);
            return r;
        } else if (ret_why)
            *ret_why = r == -ENOENT        ? "no cgroup2 hierarchy mounted"
                       : r == -EOPNOTSUPP ? "cgroup.kill not supported by the kernel"
                                          : "cgroup2 hierarchy not writable";
    }
    *ret = c;
    return 0;
}

/* Remove the leaf and any sub-cgroups the command created (deepest first). */
static void remove_tree(int parentfd, const char *name)
{
    int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            remove_tree(dirfd(d), e->d_name);
    closedir(d);
    unlinkat(parentfd, name, AT_REMOVEDIR);
}

static int cgroup_members(struct contain *c, pid_t **ret, size_t *ret_n);

/* Processes still in the leaf when we go (leftovers the user chose to keep): hand them to the
 * parent cgroup, so the leaf can be removed and nothing of ours lingers in the hierarchy. */
static void release_members(struct contain *c)
{
    pid_t *pids = NULL;
    size_t n = 0;
    if (cgroup_members(c, &pids, &n) < 0 || n == 0) {
        free(pids);
        return;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/../cgroup.procs", c->cg_path);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        for (size_t i = 0; i < n; i++) {
            char num[16];
            int len = snprintf(num, sizeof num, "%d", (int)pids[i]);
            ssize_t w = write(fd, num, (size_t)len);
            (void)w;
        }
        close(fd);
    }
    free(pids);
}

static void close_watch(struct contain *c);

void contain_free(struct contain *c)
{
    if (!c)
        return;
    if (c->cg_procs_w >= 0)
        close(c->cg_procs_w);
    if (c->cg_dirfd >= 0)
        close(c->cg_dirfd);
    closep(&c->cg_events);
    close_watch(c);
    free(c->watch_fds);
    for (int i = 0; i < V1_COUNT; i++) {
        closep(&c->v1[i].dirfd);
        closep(&c->v1[i].procs_w);
        if (c->v1[i].path) {
            /* kept leftovers go to the parent, so the leaf can go */
            char procs[PATH_MAX + 32], parent[PATH_MAX];
            snprintf(procs, sizeof procs, "%s/cgroup.procs", c->v1[i].path);
            snprintf(parent, sizeof parent, "%s/../cgroup.procs", c->v1[i].path);
            char *list = malloc(65536);
            ssize_t n = list ? read_file_at(AT_FDCWD, procs, list, 65536) : -1;
            int pfd = n > 0 ? open(parent, O_WRONLY | O_CLOEXEC) : -1;
            for (char *p = pfd >= 0 ? list : NULL; p && *p;) {
                char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                ssize_t w = write(pfd, p, len);
                (void)w;
                p = nl ? nl + 1 : NULL;
            }
            closep(&pfd);
            free(list);
            rmdir(c->v1[i].path);
            free(c->v1[i].path);
        }
    }
    if (c->cg_path) {
        release_members(c);
        char *slash = strrchr(c->cg_path, '/');
        if (slash) {
            *slash = '\0';
            int pfd = open(*c->cg_path ? c->cg_path : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (pfd >= 0) {
                remove_tree(pfd, slash + 1);
                close(pfd);
            }
        }
    }
    free(c->cg_path);
    free(c->foreign);
    free(c->buf);
    free(c);
}

enum contain_tier contain_tier(const struct contain *c) { return c->tier; }
const char *contain_tier_name(enum contain_tier t) { return t == CONTAIN_CGROUP ? "cgroup" : "subreaper"; }
const char *contain_cgroup_path(const struct contain *c) { return c->cg_path; }
int contain_cgroup_fd(const struct contain *c) { return c->cg_dirfd; }
void contain_set_root(struct contain *c, pid_t pid) { c->root = pid; }

int contain_child_join(const struct contain *c, bool v2_joined)
{
    /* "0" moves the writing process; only async-signal-safe calls here (we are post-fork). */
    if (c->tier == CONTAIN_CGROUP && !v2_joined && write(c->cg_procs_w, "0", 1) != 1)
        return -errno;
    for (int i = 0; i < V1_COUNT; i++)
        if (c->v1[i].procs_w >= 0 && write(c->v1[i].procs_w, "0", 1) != 1)
            return -errno;
    return 0;
}

/* ---- limits (contain.h, LIMITS) ---------------------------------------------------------- */

static int write_at(int dirfd, const char *name, const char *text)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, text, strlen(text));
    int r = n == (ssize_t)strlen(text) ? 0 : n < 0 ? -errno : -EIO;
    close(fd);
    return r;
}

/* Does the whitespace-separated list in file name (at dirfd) hold word? */
static bool file_has_word(int dirfd, const char *name, const char *word)
{
    char buf[1024];
    ssize_t n = read_file_at(dirfd, name, buf, sizeof buf);
    size_t wl = strlen(word);
    for (char *p = n > 0 ? buf : NULL; p && *p;) {
        while (*p == ' ' || *p == '\n')
            p++;
        char *e = p;
        while (*e && *e != ' ' && *e != '\n')
            e++;
        if ((size_t)(e - p) == wl && memcmp(p, word, wl) == 0)
            return true;
        p = e;
    }
    return false;
}

/* Enable controller ctl for the leaf: in its parent's subtree_control (a parent with processes of
 * its own refuses, but for the root cgroup). */
static bool v2_enable(struct contain *c, const char *ctl)
{
    if (file_has_word(c->cg_dirfd, "cgroup.controllers", ctl))
        return true;
    char *slash = strrchr(c->cg_path, '/');
    if (!slash)
        return false;
    *slash = '\0';
    int pfd = open(*c->cg_path ? c->cg_path : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *slash = '/';
    if (pfd < 0)
        return false;
    char cmd[32];
    snprintf(cmd, sizeof cmd, "+%s", ctl);
    bool ok = file_has_word(pfd, "cgroup.controllers", ctl) && write_at(pfd, "cgroup.subtree_control", cmd) == 0;
    close(pfd);
    return ok && file_has_word(c->cg_dirfd, "cgroup.controllers", ctl);
}

/* The cgroup v1 hierarchy of controller ctl: its mount point and our cgroup in it. */
static int v1_find(const char *ctl, char *ret, size_t size)
{
    char *buf = malloc(65536);
    if (!buf)
        return -ENOMEM;
    ssize_t n = read_file_at(AT_FDCWD, "/proc/self/mountinfo", buf, 65536);
    int r = -ENOENT;
    char *save = NULL;
    for (char *line = n > 0 ? strtok_r(buf, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
        char *sep = strstr(line, " - cgroup ");
        if (!sep)
            continue;
        /* super options, last field: a comma list holding ctl */
        char *opts = strrchr(sep, ' ');
        char want[40];
        snprintf(want, sizeof want, ",%s,", ctl);
        char list[512];
        snprintf(list, sizeof list, ",%s,", opts ? opts + 1 : "");
        if (!strstr(list, want))
            continue;
        char *mp = mount_point(line, sep);
        if (!mp)
            continue;
        char own[PATH_MAX] = "";
        char cg[8192];
        ssize_t m = read_file_at(AT_FDCWD, "/proc/self/cgroup", cg, sizeof cg);
        for (char *l = m > 0 ? cg : NULL; l && *l;) {
            char *nl = strchr(l, '\n');
            if (nl)
                *nl = '\0';
            char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (c1 && c2) {
                snprintf(list, sizeof list, ",%.*s,", (int)(c2 - c1 - 1), c1 + 1);
                if (strstr(list, want))
                    snprintf(own, sizeof own, "%s", c2 + 1);
            }
            l = nl ? nl + 1 : NULL;
        }
        if (!*own)
            continue;
        int k = snprintf(ret, size, "%s%s", mp, strcmp(own, "/") ? own : "");
        r = k > 0 && (size_t)k < size ? 0 : -ENAMETOOLONG;
        break;
    }
    free(buf);
    return r;
}

/* A leaf of the run's in controller ctl's v1 hierarchy, the limit written into it. */
static int v1_setup(struct contain *c, int which, const char *ctl, const char *file, uint64_t value,
                    const char *also)
{
    char base[PATH_MAX], path[PATH_MAX];
    int r = v1_find(ctl, base, sizeof base);
    if (r < 0)
        return r;
    remove_stale_leaves(base);
    if (snprintf(path, sizeof path, "%s/resmon-run.%d.%llu", base, (int)c->self, start_time(c->self)) >= (int)sizeof path)
        return -ENAMETOOLONG;
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return -errno;
    int dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        r = -errno;
        rmdir(path);
        return r;
    }
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)value);
    int rdfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    r = rdfd >= 0 ? write_at(rdfd, file, num) : -errno;
    if (r == 0 && also)
        write_at(rdfd, also, num); /* best effort: swap accounting may be off */
    int procs = rdfd >= 0 ? openat(rdfd, "cgroup.procs", O_WRONLY | O_CLOEXEC) : -1;
    if (rdfd >= 0)
        close(rdfd);
    if (r < 0 || procs < 0) {
        if (procs >= 0)
            close(procs);
        close(dfd);
        rmdir(path);
        return r < 0 ? r : -errno;
    }
    c->v1[which] = (struct v1_leaf){.dirfd = dfd, .procs_w = procs, .path = strdup(path)};
    return 0;
}

int contain_set_limits(struct contain *c, uint64_t memory, uint64_t tasks, bool stop_first, const char **ret_how)
{
    unsigned done = 0;
    bool v2 = false, v1 = false;
    char num[32];
    if (memory && c->tier == CONTAIN_CGROUP && v2_enable(c, "memory")) {
        int rdfd = openat(c->cg_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(num, sizeof num, "%llu", (unsigned long long)memory);
        if (rdfd >= 0 && write_at(rdfd, "memory.max", num) == 0) {
            write_at(rdfd, "memory.swap.max", "0"); /* the limit is not to be dodged by swapping */
            done |= CONTAIN_LIMIT_MEMORY;
            v2 = true;
            /* The high mark: past it the kernel reclaims and throttles the tree's allocations,
             * and counts it (memory.events high), which gives the supervisor the time to stop
             * the run, dump and finalize before the OOM killer acts at memory.max. */
            uint64_t margin = MAX(memory / 8, (uint64_t)1 << 20);
            snprintf(num, sizeof num, "%llu", (unsigned long long)(memory > 2 * margin ? memory - margin : 0));
            if (stop_first && memory > 2 * margin && write_at(rdfd, "memory.high", num) == 0)
                done |= CONTAIN_LIMIT_MEMORY_HIGH;
        }
        if (rdfd >= 0)
            close(rdfd);
    }
    if (tasks && c->tier == CONTAIN_CGROUP && v2_enable(c, "pids")) {
        int rdfd = openat(c->cg_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(num, sizeof num, "%llu", (unsigned long long)tasks);
        if (rdfd >= 0 && write_at(rdfd, "pids.max", num) == 0) {
            done |= CONTAIN_LIMIT_TASKS;
            v2 = true;
        }
        if (rdfd >= 0)
            close(rdfd);
    }
    if (memory && !(done & CONTAIN_LIMIT_MEMORY) &&
        v1_setup(c, V1_MEMORY, "memory", "memory.limit_in_bytes", memory, "memory.memsw.limit_in_bytes") == 0) {
        done |= CONTAIN_LIMIT_MEMORY;
        v1 = true;
        /* Its OOM killer off for the leaf: at the limit the kernel holds the tree's allocations
         * (memory.oom_control says under_oom) instead of killing, and the supervisor stops the
         * run, dump first, with the tree alive. */
        int rdfd = stop_first ? openat(c->v1[V1_MEMORY].dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (rdfd >= 0 && write_at(rdfd, "memory.oom_control", "1") == 0)
            done |= CONTAIN_LIMIT_MEMORY_HOLD;
        if (rdfd >= 0)
            close(rdfd);
    }
    if (tasks && !(done & CONTAIN_LIMIT_TASKS) && v1_setup(c, V1_PIDS, "pids", "pids.max", tasks, NULL) == 0) {
        done |= CONTAIN_LIMIT_TASKS;
        v1 = true;
    }
    if (ret_how)
        *ret_how = v2 && v1 ? "cgroup v2 and v1 controllers" : v2 ? "cgroup v2 controllers" : v1 ? "cgroup v1 controllers" : NULL;
    return (int)done;
}

/* "key N" of a flat-keyed cgroup file. */
static bool keyed(int dirfd, const char *file, const char *key, uint64_t *ret)
{
    char buf[4096];
    if (dirfd < 0 || read_file_at(dirfd, file, buf, sizeof buf) < 0)
        return false;
    size_t kl = strlen(key);
    for (char *l = buf; l && *l;) {
        if (strncmp(l, key, kl) == 0 && l[kl] == ' ') {
            *ret = strtoull(l + kl + 1, NULL, 10);
            return true;
        }
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    return false;
}

void contain_events(struct contain *c, struct contain_events *ret)
{
    *ret = (struct contain_events){0};
    int v2 = c->tier == CONTAIN_CGROUP ? c->cg_dirfd : -1;
    uint64_t v;
    char buf[64];
    if (keyed(v2, "memory.events", "oom_kill", &v) || keyed(c->v1[V1_MEMORY].dirfd, "memory.oom_control", "oom_kill", &v))
        ret->have_oom = true, ret->oom_kills = v;
    if (keyed(c->v1[V1_MEMORY].dirfd, "memory.oom_control", "under_oom", &v))
        ret->under_oom = v != 0;
    if (keyed(v2, "memory.events", "high", &v))
        ret->have_high = true, ret->high_events = v;
    if (keyed(v2, "pids.events", "max", &v) || keyed(c->v1[V1_PIDS].dirfd, "pids.events", "max", &v))
        ret->have_tasks = true, ret->tasks_refused = v;
    if ((v2 >= 0 && read_file_at(v2, "memory.peak", buf, sizeof buf) > 0) ||
        (c->v1[V1_MEMORY].dirfd >= 0 && read_file_at(c->v1[V1_MEMORY].dirfd, "memory.max_usage_in_bytes", buf, sizeof buf) > 0))
        ret->memory_peak = strtoull(buf, NULL, 10);
}

int contain_home_oom_file(char *ret, size_t size)
{
    char mnt[PATH_MAX], own[PATH_MAX];
    if (find_cgroup2_mount(mnt, sizeof mnt) == 0 && find_own_cgroup(own, sizeof own) == 0 && strcmp(own, "/") != 0 &&
        snprintf(ret, size, "%s%s/memory.events", mnt, own) < (int)size && access(ret, R_OK) == 0)
        return 0;
    char base[PATH_MAX];
    if (v1_find("memory", base, sizeof base) == 0 && snprintf(ret, size, "%s/memory.oom_control", base) < (int)size &&
        access(ret, R_OK) == 0) {
        /* the hierarchy's root: its own directory is the mount point, a parent has this file */
        char parent[PATH_MAX + 32];
        snprintf(parent, sizeof parent, "%s/../memory.oom_control", base);
        if (access(parent, R_OK) == 0)
            return 0;
    }
    return -ENOENT;
}

/* ---- listing ------------------------------------------------------------------------------- */

static int read_into(struct contain *c, int dirfd, const char *name, size_t *ret_len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    for (;;) {
        if (c->buf_cap - len < 4096) {
            size_t cap = c->buf_cap ? c->buf_cap * 2 : 16384;
            char *p = realloc(c->buf, cap);
            if (!p) {
                close(fd);
                return -ENOMEM;
            }
            c->buf = p;
            c->buf_cap = cap;
        }
        ssize_t n = read_retry(fd, c->buf + len, c->buf_cap - len - 1);
        if (n < 0) {
            close(fd);
            return (int)n;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    c->buf[len] = '\0';
    *ret_len = len;
    return 0;
}

static int push_pid(pid_t **v, size_t *n, size_t *cap, pid_t pid)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        pid_t *p = realloc(*v, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = pid;
    return 0;
}

/* Append the pids of a whitespace-separated list in c->buf, skipping resmon-run, foreign ones and
 * those already in v[0..first). */
static int push_listed(struct contain *c, pid_t **v, size_t *n, size_t *cap, size_t first)
{
    for (char *p = c->buf; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        p = end;
        while (*p == '\n' || *p == ' ')
            p++;
        if (pid <= 0 || pid == c->self || is_foreign(c, (pid_t)pid))
            continue;
        bool dup = false;
        for (size_t i = 0; i < first && !dup; i++)
            dup = (*v)[i] == (pid_t)pid;
        if (!dup && push_pid(v, n, cap, (pid_t)pid) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int cgroup_members(struct contain *c, pid_t **ret, size_t *ret_n)
{
    size_t len;
    int r = read_into(c, c->cg_dirfd, "cgroup.procs", &len);
    if (r < 0)
        return r;
    pid_t *v = NULL;
    size_t n = 0, cap = 0;
    if (push_listed(c, &v, &n, &cap, 0) < 0) {
        free(v);
        return -ENOMEM;
    }
    /* resmon-run's own children (it is single-threaded: its task's children are all of them):
     * one that left the cgroup is still the tree's. */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)c->self);
    size_t from_cgroup = n;
    if (read_into(c, AT_FDCWD, path, &len) == 0 && push_listed(c, &v, &n, &cap, from_cgroup) < 0) {
        free(v);
        return -ENOMEM;
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

struct proc_link {
    pid_t pid, ppid;
};

static int cmp_ppid(const void *a, const void *b)
{
    const struct proc_link *x = a, *y = b;
    return (x->ppid > y->ppid) - (x->ppid < y->ppid);
}

/* Parent pid and state from /proc/<pid>/stat: the command name may hold anything, so parse from
 * the LAST ')'; then " <state> <ppid>" (proc(5) fields 3 and 4). */
static int stat_ppid(int procfd, const char *name, pid_t *ret_ppid, char *ret_state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "%s/stat", name);
    ssize_t n = read_file_at(procfd, path, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ' || !rp[2] || rp[3] != ' ')
        return -EINVAL;
    *ret_state = rp[2];
    *ret_ppid = (pid_t)strtol(rp + 4, NULL, 10);
    return 0;
}

/* Append the children of pid (of each of its threads: a child belongs to the thread that forked
 * it) to v, without resmon-run and foreign ones. A process gone meanwhile has none. */
static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return x < y ? -1 : x > y;
}

static int children_of(struct contain *c, int procfd, pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
    char path[64];
    snprintf(path, sizeof path, "%d/task", (int)pid);
    int fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? 0 : -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -errno;
    }
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char name[sizeof e->d_name + 16];
        snprintf(name, sizeof name, "%s/children", e->d_name);
        size_t len;
        if (read_into(c, dirfd(d), name, &len) == 0)
            r = push_listed(c, v, n, cap, 0);
    }
    closedir(d);
    return r;
}

/* Every descendant of ours: orphans re-parent to us (subreaper), so the tree under our pid holds
 * every process the command ever started that is still alive or a zombie. Breadth-first down the
 * children lists: the tree's processes are read, not the machine's. */
static int subreaper_walk(struct contain *c, pid_t **ret, size_t *ret_n);

static int subreaper_members(struct contain *c, pid_t **ret, size_t *ret_n)
{
    if (!c->children_files)
        return subreaper_walk(c, ret, ret_n);
    int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0)
        return -errno;
    pid_t *out = NULL;
    size_t n = 0, cap = 0;
    int r = children_of(c, procfd, c->self, &out, &n, &cap);
    for (size_t i = 0; r == 0 && i < n; i++)
        r = children_of(c, procfd, out[i], &out, &n, &cap);
    close(procfd);
    if (r < 0) {
        free(out);
        return r;
    }
    /* A process re-parented to us between two reads is listed twice: once is enough. */
    if (n > 1)
        qsort(out, n, sizeof *out, cmp_pid);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || out[k - 1] != out[i])
            out[k++] = out[i];
    *ret = out;
    *ret_n = k;
    return 0;
}

/* The same without children lists: every process's parent link. */
static int subreaper_walk(struct contain *c, pid_t **ret, size_t *ret_n)
{
    int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd < 0)
        return -errno;
    DIR *d = fdopendir(procfd);
    if (!d) {
        close(procfd);
        return -errno;
    }
    struct proc_link *all = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid_t ppid;
        char state;
        /* A process that vanished between readdir and open is normal. */
        if (stat_ppid(dirfd(d), e->d_name, &ppid, &state) < 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 512;
            struct proc_link *p = realloc(all, nc * sizeof *p);
            if (!p) {
                r = -ENOMEM;
                break;
            }
            all = p;
            cap = nc;
        }
        all[n].pid = (pid_t)atoi(e->d_name);
        all[n].ppid = ppid;
        n++;
    }
    closedir(d);
    if (r < 0) {
        free(all);
        return r;
    }
    /* Breadth-first from us over the list sorted by parent. */
    qsort(all, n, sizeof *all, cmp_ppid);
    pid_t *out = NULL;
    size_t nout = 0, capout = 0;
    pid_t *queue = NULL;
    size_t qn = 0, qcap = 0, qi = 0;
    if (push_pid(&queue, &qn, &qcap, c->self) < 0)
        r = -ENOMEM;
    while (r == 0 && qi < qn) {
        pid_t parent = queue[qi++];
        /* lower bound of parent in the sorted array */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (all[mid].ppid < parent)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < n && all[i].ppid == parent; i++) {
            if (parent == c->self && is_foreign(c, all[i].pid))
                continue;
            if (push_pid(&queue, &qn, &qcap, all[i].pid) < 0 || push_pid(&out, &nout, &capout, all[i].pid) < 0) {
                r = -ENOMEM;
                break;
            }
        }
    }
    free(queue);
    free(all);
    if (r < 0) {
        free(out);
        return r;
    }
    *ret = out;
    *ret_n = nout;
    return 0;
}

int contain_members(struct contain *c, pid_t **ret_pids, size_t *ret_n)
{
    return c->tier == CONTAIN_CGROUP ? cgroup_members(c, ret_pids, ret_n) : subreaper_members(c, ret_pids, ret_n);
}

/* ---- signalling ---------------------------------------------------------------------------- */

static int sys_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
static int sys_pidfd_send_signal(int fd, int sig) { return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0); }

/* Is the process behind pidfd still one of ours? Checked after pidfd_open so that a pid reused by
 * an unrelated process between listing and signalling is never signalled. */
static bool still_member(struct contain *c, pid_t pid)
{
    char path[64];
    if (c->tier == CONTAIN_CGROUP) {
        char buf[4096];
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
        if (read_file_at(AT_FDCWD, path, buf, sizeof buf) < 0)
            return false;
        char *line = strstr(buf, "0::");
        if (!line)
            return false;
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        /* Our leaf's name is unique; members sit in it or below it. */
        const char *leaf = strrchr(c->cg_path, '/');
        if (leaf && strstr(line, leaf) != NULL)
            return true;
        /* a child of ours that left the cgroup */
        pid_t ppid;
        char state;
        snprintf(path, sizeof path, "%d", (int)pid);
        int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        bool child = procfd >= 0 && stat_ppid(procfd, path, &ppid, &state) == 0 && ppid == c->self &&
                     !is_foreign(c, pid);
        if (procfd >= 0)
            close(procfd);
        return child;
    }
    /* Subreaper tier: walk the parent links up to us. */
    for (int depth = 0; depth < 4096 && pid > 1; depth++) {
        pid_t ppid;
        char state;
        snprintf(path, sizeof path, "%d", (int)pid);
        int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (procfd < 0)
            return false;
        int r = stat_ppid(procfd, path, &ppid, &state);
        close(procfd);
        if (r < 0)
            return false;
        if (ppid == c->self)
            return true;
        pid = ppid;
    }
    return false;
}

static int signal_member(struct contain *c, pid_t pid, int sig)
{
    int fd = sys_pidfd_open(pid);
    if (fd < 0)
        return -errno;
    int r = 0;
    if (!still_member(c, pid))
        r = -ESRCH;
    else if (sys_pidfd_send_signal(fd, sig) < 0)
        r = -errno;
    close(fd);
    return r;
}

/* May the command's process group be signalled by its id? Only while the command is not reaped:
 * its pid then holds the id. Once reaped, the id is free as soon as the group has no member left
 * in it (they died, or left it with setsid), and the kernel may give it to any new process, which
 * becomes a group of that id by its own setsid or setpgid (a shell's job, a daemon, another
 * supervisor's command): kill(-id) would reach a stranger. The group's members are then signalled
 * one by one, each held by a pidfd and checked a member (signal_member). */
static bool group_ours(const struct contain *c) { return c->root > 0 && !c->root_reaped; }

int contain_signal_group(struct contain *c, int sig)
{
    if (c->root <= 0)
        return 0;
    if (!group_ours(c)) {
        pid_t *pids = NULL;
        size_t n = 0;
        int r = contain_members(c, &pids, &n);
        if (r < 0)
            return r;
        int count = 0;
        for (size_t i = 0; i < n; i++)
            if (getpgid(pids[i]) == c->root && signal_member(c, pids[i], sig) == 0) {
                count++;
                if (sig != SIGKILL && sig != SIGCONT && sig != 0)
                    signal_member(c, pids[i], SIGCONT);
            }
        free(pids);
        return count;
    }
    int r = kill(-c->root, sig) == 0 ? 1 : -errno;
    /* A stopped process would keep the signal pending forever. */
    if (sig != SIGKILL && sig != SIGCONT && sig != 0)
        kill(-c->root, SIGCONT);
    return r;
}

int contain_signal_all(struct contain *c, int sig)
{
    int count = 0;
    /* The group first: it reaches the usual case in one call, and processes forked while we walk
     * the list inherit the group. */
    bool group = group_ours(c) && kill(-c->root, sig) == 0;
    if (group)
        count++;
    pid_t *pids = NULL;
    size_t n = 0;
    int r = contain_members(c, &pids, &n);
    if (r < 0)
        return count > 0 ? count : r;
    for (size_t i = 0; i < n; i++) {
        /* The group's members have theirs: a second signal, arriving while the first one's handler
         * runs, runs it again (a shell's trap does). */
        if (group && getpgid(pids[i]) == c->root)
            count++;
        else if (signal_member(c, pids[i], sig) == 0)
            count++;
    }
    if (sig != SIGKILL && sig != SIGCONT && sig != 0) {
        if (group)
            kill(-c->root, SIGCONT);
        for (size_t i = 0; i < n; i++)
            signal_member(c, pids[i], SIGCONT);
    }
    free(pids);
    return count;
}

static bool pid_alive(int procfd, pid_t pid)
{
    char name[16];
    pid_t ppid;
    char state;
    snprintf(name, sizeof name, "%d", (int)pid);
    if (stat_ppid(procfd, name, &ppid, &state) < 0)
        return false;
    return state != 'Z' && state != 'X';
}

bool contain_empty(struct contain *c)
{
    if (c->tier == CONTAIN_CGROUP) {
        char buf[256];
        ssize_t n = read_file_at(c->cg_dirfd, "cgroup.events", buf, sizeof buf);
        if (n >= 0) {
            const char *p = strstr(buf, "populated ");
            if (p && p[10] != '0')
                return false;
            /* empty inside: only children that left it may be alive (listed below) */
        }
    }
    pid_t *pids = NULL;
    size_t n = 0;
    if (contain_members(c, &pids, &n) < 0)
        return false;
    int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    bool empty = true;
    for (size_t i = 0; i < n && empty; i++)
        if (procfd < 0 || pid_alive(procfd, pids[i]))
            empty = false;
    if (procfd >= 0)
        close(procfd);
    free(pids);
    return empty;
}

size_t contain_kill_pass(struct contain *c)
{
    pid_t *pids = NULL;
    size_t n = 0;
    if (contain_members(c, &pids, &n) < 0)
        return 0;
    int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    size_t alive = 0;
    for (size_t i = 0; i < n; i++)
        if (procfd < 0 || pid_alive(procfd, pids[i]))
            alive++;
    if (c->tier == CONTAIN_CGROUP) {
        /* The kernel kills every member, and any process forked concurrently, atomically. */
        int fd = openat(c->cg_dirfd, "cgroup.kill", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t w = write(fd, "1", 1);
            (void)w;
            close(fd);
        }
    }
    /* The group, then every member listed (in the cgroup tier: the children outside it; a second
     * KILL is harmless). */
    if (group_ours(c))
        kill(-c->root, SIGKILL);
    for (size_t i = 0; i < n; i++)
        if (procfd < 0 || pid_alive(procfd, pids[i]))
            signal_member(c, pids[i], SIGKILL);
    if (procfd >= 0)
        close(procfd);
    free(pids);
    return alive;
}

static void close_watch(struct contain *c)
{
    for (size_t i = 0; i < c->n_watch; i++)
        close(c->watch_fds[i]);
    c->n_watch = 0;
}

size_t contain_watch(struct contain *c, int *fds, size_t max, short *ret_events, bool *ret_complete)
{
    *ret_complete = true;
    if (c->tier == CONTAIN_CGROUP) {
        /* cgroupfs notifies a change of cgroup.events as POLLPRI, once per read of it. */
        char buf[256];
        if (c->cg_events < 0)
            c->cg_events = openat(c->cg_dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
        if (c->cg_events >= 0 && pread(c->cg_events, buf, sizeof buf, 0) >= 0 && max > 0) {
            *ret_events = POLLPRI;
            fds[0] = c->cg_events;
            /* members outside the cgroup are resmon-run's children: SIGCHLD tells of them */
            return 1;
        }
        *ret_complete = false;
        return 0;
    }
    close_watch(c);
    pid_t *pids = NULL;
    size_t n = 0;
    if (contain_members(c, &pids, &n) < 0) {
        *ret_complete = false;
        return 0;
    }
    if (!c->watch_fds || max > 0) {
        int *w = realloc(c->watch_fds, (max ? max : 1) * sizeof *w);
        if (w)
            c->watch_fds = w;
    }
    char path[64], buf[1024];
    for (size_t i = 0; i < n && c->watch_fds; i++) {
        /* resmon-run's children end with a SIGCHLD: no descriptor needed */
        pid_t ppid;
        char state;
        snprintf(path, sizeof path, "%d", (int)pids[i]);
        int procfd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        bool child = procfd >= 0 && stat_ppid(procfd, path, &ppid, &state) == 0 && ppid == c->self;
        if (procfd >= 0)
            close(procfd);
        (void)buf;
        if (child)
            continue;
        if (c->n_watch == max) {
            *ret_complete = false;
            break;
        }
        int fd = sys_pidfd_open(pids[i]);
        if (fd < 0)
            continue; /* gone already */
        c->watch_fds[c->n_watch++] = fd;
    }
    free(pids);
    for (size_t i = 0; i < c->n_watch; i++)
        fds[i] = c->watch_fds[i];
    *ret_events = POLLIN;
    return c->n_watch;
}

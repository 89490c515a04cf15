/* outfile.c — see outfile.h. */
#include "base/outfile.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory part of path ("." for a bare name, "/" for one at the root); NULL: no memory. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* st, found in dirfd/path's directory, is someone else's in a shared directory. */
static bool foreign_in_shared_dir(int dirfd, const char *path, const struct stat *st)
{
    if (st->st_uid == geteuid())
        return false;
    _cleanup_free_ char *dir = dir_of(path);
    struct stat ds;
    if (!dir || fstatat(dirfd, dir, &ds, 0) < 0)
        return true; /* unknown: the careful answer */
    bool shared = (ds.st_mode & S_ISVTX) && (ds.st_mode & (S_IWGRP | S_IWOTH));
    return shared && st->st_uid != ds.st_uid;
}

static int judge(int dirfd, const char *path, const struct stat *st)
{
    if (S_ISLNK(st->st_mode))
        return -ELOOP;
    if (S_ISDIR(st->st_mode))
        return -EISDIR;
    if (!S_ISREG(st->st_mode))
        return -EINVAL;
    return foreign_in_shared_dir(dirfd, path, st) ? -EPERM : 0;
}

int outfile_check(int dirfd, const char *path)
{
    if (!path || !*path)
        return -EINVAL;
    struct stat st;
    if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    return judge(dirfd, path, &st);
}

static int set_blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? -errno : 0;
}

int outfile_create(int dirfd, const char *path, int flags, mode_t mode, int *ret_fd)
{
    return outfile_create_keep(dirfd, path, flags, mode, ret_fd, NULL);
}

int outfile_create_keep(int dirfd, const char *path, int flags, mode_t mode, int *ret_fd, int *ret_removed)
{
    if (ret_removed)
        *ret_removed = -1;
    if (!path || !*path)
        return -EINVAL;
    /* A few rounds: in a directory others write to, the name can be taken again between the
     * removal and the creation. */
    for (int round = 0; round < 4; round++) {
        int fd = openat(dirfd, path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
        if (fd >= 0) {
            int r = set_blocking(fd);
            if (r < 0) {
                close(fd);
                return r;
            }
            *ret_fd = fd;
            return 0;
        }
        if (errno != EEXIST)
            return -errno;
        int r = outfile_check(dirfd, path);
        if (r == -ENOENT)
            continue;
        if (r < 0)
            return r;
        /* Read-only and non-blocking: whatever took the name meanwhile is only looked at. */
        _cleanup_close_ int old = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (old < 0) {
            if (errno == ENOENT)
                continue;
            return errno == ELOOP ? -ELOOP : -errno;
        }
        struct stat st;
        if (fstat(old, &st) < 0)
            return -errno;
        if ((r = judge(dirfd, path, &st)) < 0)
            return r;
        /* a file another run is writing is that run's */
        if (flock(old, LOCK_EX | LOCK_NB) < 0)
            return errno == EWOULDBLOCK ? -EBUSY : -errno;
        if (unlinkat(dirfd, path, 0) < 0 && errno != ENOENT)
            return -errno;
        if (ret_removed && *ret_removed < 0)
            *ret_removed = TAKE_FD(old);
    }
    return -EEXIST;
}

int outfile_append(const char *path, int flags, int *ret_fd)
{
    if (!path || !*path)
        return -EINVAL;
    /* Judged first: a FIFO opened for writing without a reader would say ENXIO, not what it is. */
    int r = outfile_check(AT_FDCWD, path);
    if (r < 0 && r != -ENOENT)
        return r;
    if (r == -ENOENT && (flags & O_ACCMODE) == O_RDWR)
        return r;
    int oflags = flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (r == -ENOENT ? O_CREAT : 0);
    _cleanup_close_ int fd = open(path, oflags, 0666);
    if (fd < 0)
        return errno == ENXIO ? -EINVAL : -errno;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if ((r = judge(AT_FDCWD, path, &st)) < 0 || (r = set_blocking(fd)) < 0)
        return r;
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* 64 random bits as 16 hex digits, for a temporary name nobody can guess ahead. */
static void random_hex(char out[17])
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        /* no entropy yet (early boot): not guessable in advance still, only less so */
        static uint64_t mix;
        v = (mix += 0x9E3779B97F4A7C15ull) ^ now_ns() ^ ((uint64_t)getpid() << 32);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)v);
}

/* dir/.BASE.RANDOM.tmp into tmp (hidden, beside the target: same filesystem, so rename is atomic;
 * the base is cut to stay under NAME_MAX). */
static void temp_name(char *tmp, size_t size, const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    char rnd[17];
    random_hex(rnd);
    snprintf(tmp, size, "%.*s.%.200s.%s.tmp", dirlen, path, base, rnd);
}

/* Rename tmp over path. Where path was absent when judged, nothing that appeared there since is
 * replaced before it is judged in turn (RENAME_NOREPLACE, where the filesystem has it). */
static int take_path(int dirfd, const char *tmp, const char *path, bool absent)
{
    if (absent) {
        if (renameat2(dirfd, tmp, dirfd, path, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno == EEXIST) {
            int r = outfile_check(dirfd, path);
            if (r < 0 && r != -ENOENT)
                return r;
        } else if (errno != EINVAL && errno != ENOSYS) {
            return -errno;
        }
    }
    return renameat(dirfd, tmp, dirfd, path) < 0 ? -errno : 0;
}

/* Shared by every output that is finalized before a kill (the profile, the JUnit report, ...). */
int write_file_atomically(int dirfd, const char *path, int (*fill)(void *ctx, int fd), void *ctx, int *keep_fd)
{
    return write_file_atomically_flags(dirfd, path, fill, ctx, keep_fd, 0);
}

int write_file_atomically_flags(int dirfd, const char *path, int (*fill)(void *ctx, int fd), void *ctx, int *keep_fd,
                                unsigned flags)
{
    if (!path || !*path)
        return -EINVAL;
    const char *slash = strrchr(path, '/');
    if (!*(slash ? slash + 1 : path))
        return -EISDIR;
    int r = outfile_check(dirfd, path);
    if (r < 0 && r != -ENOENT)
        return r;
    bool absent = r == -ENOENT;
    _cleanup_free_ char *dir = dir_of(path);
    size_t size = strlen(path) + 200 + 64;
    _cleanup_free_ char *tmp = malloc(size);
    if (!dir || !tmp)
        return -ENOMEM;

    bool named = false;
    _cleanup_close_ int fd = openat(dirfd, dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return -errno;
    for (int attempt = 0; fd < 0 && attempt < 16; attempt++) {
        /* no O_TMPFILE here: a name of its own from the start */
        temp_name(tmp, size, path);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0 && errno != EEXIST)
            return -errno;
        named = fd >= 0;
    }
    if (fd < 0)
        return -EEXIST; /* 16 random names all taken: someone is in the way, said */

    bool sync = !(flags & OUTFILE_NO_SYNC);
    r = fill(ctx, fd);
    if (r >= 0 && sync && fsync(fd) < 0)
        r = -errno;
    /* Locked before it takes the path: the path is never an unlocked file while the run lives. */
    if (r >= 0 && keep_fd && flock(fd, LOCK_EX | LOCK_NB) < 0)
        r = -errno;
    if (r >= 0 && !named) {
        /* The unnamed file gets its name only now, whole; linkat with AT_EMPTY_PATH would need
         * CAP_DAC_READ_SEARCH, the /proc link does not. */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        r = -EEXIST;
        for (int attempt = 0; attempt < 16 && r == -EEXIST; attempt++) {
            temp_name(tmp, size, path);
            r = linkat(AT_FDCWD, self, dirfd, tmp, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
        }
        named = r == 0;
    }
    if (r >= 0 && !keep_fd) {
        int fdx = TAKE_FD(fd);
        if (close(fdx) < 0 && errno != EINTR)
            r = -errno;
    }
    if (r >= 0)
        r = take_path(dirfd, tmp, path, absent);
    if (r < 0) {
        if (named)
            unlinkat(dirfd, tmp, 0);
        return r;
    }
    if (keep_fd) {
        if (*keep_fd >= 0)
            close(*keep_fd);
        *keep_fd = TAKE_FD(fd);
    }
    if (!sync)
        return 0;
    /* The rename itself must survive a crash: the directory entry is data too. */
    _cleanup_close_ int dfd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        (void)fsync(dfd);
    return 0;
}

const char *outfile_why(int err, int dirfd, const char *path)
{
    struct stat st;
    switch (err) {
    case -ELOOP:
        return "it is a symbolic link (refused)";
    case -EPERM:
        return "it belongs to another user in a shared directory (refused)";
    case -EBUSY:
        return "another resmon-run is writing it";
    case -EINVAL:
        if (path && fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
            return S_ISFIFO(st.st_mode)   ? "it exists and is a FIFO, not a regular file"
                   : S_ISCHR(st.st_mode)  ? "it exists and is a character device, not a regular file"
                   : S_ISBLK(st.st_mode)  ? "it exists and is a block device, not a regular file"
                   : S_ISSOCK(st.st_mode) ? "it exists and is a socket, not a regular file"
                                          : "it exists and is not a regular file";
        break;
    }
    return strerror(-err);
}

/* Unit tests of the output-file policy (outfile.h).
 *
 * Linked with -Wl,--wrap=openat: a case can make O_TMPFILE unsupported, as on a filesystem that
 * lacks it, to reach the named-temporary path the integration tests cannot. The cases with
 * another user's file need root (to chown it). */
#include "base/outfile.h"

#include <check.h>
#include "check_run.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

int __real_openat(int dirfd, const char *path, int flags, ...);
int __wrap_openat(int dirfd, const char *path, int flags, ...);

static bool no_tmpfile;
static int tmpfile_opens;

int __wrap_openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if ((flags & O_TMPFILE) == O_TMPFILE) {
        tmpfile_opens++;
        if (no_tmpfile) {
            errno = EOPNOTSUPP;
            return -1;
        }
    }
    return __real_openat(dirfd, path, flags, mode);
}

static char dir[64];

static void make_dir(mode_t mode)
{
    strcpy(dir, "/tmp/unit_outfile.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, mode), 0);
}

static char *at(const char *name)
{
    static char buf[4][128];
    static int i;
    char *p = buf[i++ % 4];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static int fill_hello(void *ctx, int fd)
{
    (void)ctx;
    return write_all(fd, "hello\n", 6);
}

static int fill_fails(void *ctx, int fd)
{
    (void)ctx;
    (void)write_all(fd, "half", 4);
    return -ENOSPC;
}

static void slurp(const char *path, char *buf, size_t n)
{
    ssize_t r = read_file_at(AT_FDCWD, path, buf, n);
    ck_assert_int_ge(r, 0);
}

/* Entries of dir other than the names given (NULL-terminated), counted. */
static int others(const char *const *names)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        bool known = false;
        for (const char *const *p = names; *p; p++)
            known |= !strcmp(*p, e->d_name);
        n += !known;
    }
    closedir(d);
    return n;
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_check_kinds)
{
    make_dir(0700);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("absent")), -ENOENT);
    ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("fifo")), -EINVAL);
    ck_assert_str_eq(outfile_why(-EINVAL, AT_FDCWD, at("fifo")), "it exists and is a FIFO, not a regular file");
    ck_assert_int_eq(symlink("absent", at("link")), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("link")), -ELOOP);
    ck_assert_int_eq(mkdir(at("sub"), 0700), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("sub")), -EISDIR);
    ck_assert_int_eq(close(open(at("mine"), O_WRONLY | O_CREAT, 0600)), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("mine")), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, "/dev/null"), -EINVAL);
    ck_assert_str_eq(outfile_why(-EINVAL, AT_FDCWD, "/dev/null"),
                     "it exists and is a character device, not a regular file");
    int sk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(sk, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", at("sock"));
    ck_assert_int_eq(bind(sk, (struct sockaddr *)&sa, sizeof sa), 0);
    close(sk);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("sock")), -EINVAL);
    ck_assert_str_eq(outfile_why(-EINVAL, AT_FDCWD, at("sock")), "it exists and is a socket, not a regular file");
    int fd = -1;
    ck_assert_int_eq(outfile_append(at("sock"), O_WRONLY | O_APPEND, &fd), -EINVAL);
    cleanup();
}
END_TEST

/* Without O_TMPFILE the temporary is a named file with a random part, and none is left. */
START_TEST(test_atomic_without_tmpfile)
{
    make_dir(0700);
    no_tmpfile = true;
    tmpfile_opens = 0;
    ck_assert_int_eq(write_file_atomically(AT_FDCWD, at("out.xml"), fill_hello, NULL, NULL), 0);
    ck_assert_int_eq(tmpfile_opens, 1);
    char buf[64];
    slurp(at("out.xml"), buf, sizeof buf);
    ck_assert_str_eq(buf, "hello\n");
    const char *only[] = {"out.xml", NULL};
    ck_assert_int_eq(others(only), 0);
    /* a failed fill leaves the old file and no temporary */
    ck_assert_int_eq(write_file_atomically(AT_FDCWD, at("out.xml"), fill_fails, NULL, NULL), -ENOSPC);
    slurp(at("out.xml"), buf, sizeof buf);
    ck_assert_str_eq(buf, "hello\n");
    ck_assert_int_eq(others(only), 0);
    no_tmpfile = false;
    cleanup();
}
END_TEST

/* With O_TMPFILE: written unnamed, the file at the path replaced (a new inode), a FIFO refused. */
START_TEST(test_atomic_replaces)
{
    make_dir(0700);
    tmpfile_opens = 0;
    int old = open(at("out.xml"), O_WRONLY | O_CREAT, 0666);
    ck_assert_int_ge(old, 0);
    struct stat before, after;
    ck_assert_int_eq(fstat(old, &before), 0);
    ck_assert_int_eq(write_file_atomically(AT_FDCWD, at("out.xml"), fill_hello, NULL, NULL), 0);
    ck_assert_int_eq(tmpfile_opens, 1);
    ck_assert_int_eq(stat(at("out.xml"), &after), 0);
    ck_assert(before.st_ino != after.st_ino);
    /* what the old descriptor writes goes to the old file, not to the output */
    ck_assert_int_eq(write_all(old, "forged\n", 7), 0);
    close(old);
    char buf[64];
    slurp(at("out.xml"), buf, sizeof buf);
    ck_assert_str_eq(buf, "hello\n");
    ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
    ck_assert_int_eq(write_file_atomically(AT_FDCWD, at("fifo"), fill_hello, NULL, NULL), -EINVAL);
    struct stat st;
    ck_assert_int_eq(lstat(at("fifo"), &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    cleanup();
}
END_TEST

/* outfile_create: exclusive, the mode asked (never more than 0644 here), an old file of one's own
 * replaced rather than reused, a locked one refused. */
START_TEST(test_create)
{
    make_dir(0700);
    mode_t um = umask(0);
    int old = open(at("s.json"), O_WRONLY | O_CREAT | O_APPEND, 0666);
    ck_assert_int_ge(old, 0);
    int fd = -1;
    ck_assert_int_eq(outfile_create(AT_FDCWD, at("s.json"), O_RDWR | O_APPEND, 0644, &fd), 0);
    umask(um);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, 0644);
    ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    ck_assert_int_eq(write_all(old, "forged\n", 7), 0);
    ck_assert_int_eq(write_all(fd, "mine\n", 5), 0);
    char buf[64];
    slurp(at("s.json"), buf, sizeof buf);
    ck_assert_str_eq(buf, "mine\n");
    close(old);
    /* held by another run (its lock): refused */
    ck_assert_int_eq(flock(fd, LOCK_EX), 0);
    int fd2 = -1;
    ck_assert_int_eq(outfile_create(AT_FDCWD, at("s.json"), O_RDWR | O_APPEND, 0644, &fd2), -EBUSY);
    close(fd);
    ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
    ck_assert_int_eq(outfile_create(AT_FDCWD, at("fifo"), O_RDWR | O_APPEND, 0644, &fd2), -EINVAL);
    cleanup();
}
END_TEST

/* outfile_create_keep: the file removed to take the path comes back open (its blocks stay until
 * that close), nothing when there was none. */
START_TEST(test_create_keep)
{
    make_dir(0700);
    int old = open(at("p.json"), O_WRONLY | O_CREAT, 0644);
    ck_assert_int_ge(old, 0);
    ck_assert_int_eq(write_all(old, "old\n", 4), 0);
    struct stat was, st;
    ck_assert_int_eq(fstat(old, &was), 0);
    close(old);
    int fd = -1, removed = -2;
    ck_assert_int_eq(outfile_create_keep(AT_FDCWD, at("p.json"), O_RDWR, 0644, &fd, &removed), 0);
    ck_assert_int_ge(removed, 0);
    ck_assert_int_eq(fstat(removed, &st), 0);
    ck_assert(st.st_ino == was.st_ino && st.st_dev == was.st_dev);
    ck_assert_int_eq(st.st_nlink, 0);
    ck_assert_int_eq(st.st_size, 4);
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert(st.st_ino != was.st_ino);
    close(removed);
    close(fd);
    ck_assert_int_eq(unlink(at("p.json")), 0);
    ck_assert_int_eq(outfile_create_keep(AT_FDCWD, at("p.json"), O_RDWR, 0644, &fd, &removed), 0);
    ck_assert_int_eq(removed, -1);
    close(fd);
    cleanup();
}
END_TEST

/* outfile_append: a FIFO without a reader is refused at once (no hang, not ENXIO), a file is
 * appended to, a missing one created, O_RDWR does not create. */
START_TEST(test_append)
{
    make_dir(0700);
    ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
    int fd = -1;
    ck_assert_int_eq(outfile_append(at("fifo"), O_WRONLY | O_APPEND, &fd), -EINVAL);
    ck_assert_int_eq(outfile_append(at("absent"), O_RDWR, &fd), -ENOENT);
    ck_assert_int_eq(outfile_append(at("sum.md"), O_WRONLY | O_APPEND, &fd), 0);
    ck_assert_int_eq(write_all(fd, "one\n", 4), 0);
    close(fd);
    ck_assert_int_eq(outfile_append(at("sum.md"), O_WRONLY | O_APPEND, &fd), 0);
    ck_assert_int_eq(write_all(fd, "two\n", 4), 0);
    close(fd);
    char buf[64];
    slurp(at("sum.md"), buf, sizeof buf);
    ck_assert_str_eq(buf, "one\ntwo\n");
    ck_assert_int_eq(symlink("sum.md", at("link")), 0);
    ck_assert_int_eq(outfile_append(at("link"), O_WRONLY | O_APPEND, &fd), -ELOOP);
    cleanup();
}
END_TEST

/* Plants another user's file at the path ctx names while the temporary is written. */
static int fill_and_plant(void *ctx, int fd)
{
    int p = open(ctx, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (p < 0 || fchown(p, 65534, 65534) < 0)
        return -EIO;
    close(p);
    return fill_hello(NULL, fd);
}

/* Another user's file: refused in a sticky directory writable by all or by its group, allowed
 * in one that is not shared, and a file of the directory's owner is not someone else's. */
START_TEST(test_foreign)
{
    if (geteuid() != 0) {
        check_skip("another user's file needs root (chown): skipped\n");
        return;
    }
    const uid_t other = 65534;
    make_dir(01777);
    int fd = open(at("theirs"), O_WRONLY | O_CREAT, 0666);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchown(fd, other, other), 0);
    close(fd);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("theirs")), -EPERM);
    ck_assert_str_eq(outfile_why(-EPERM, AT_FDCWD, at("theirs")),
                     "it belongs to another user in a shared directory (refused)");
    ck_assert_int_eq(write_file_atomically(AT_FDCWD, at("theirs"), fill_hello, NULL, NULL), -EPERM);
    ck_assert_int_eq(outfile_create(AT_FDCWD, at("theirs"), O_RDWR, 0644, &fd), -EPERM);
    ck_assert_int_eq(outfile_append(at("theirs"), O_WRONLY | O_APPEND, &fd), -EPERM);
    struct stat st;
    ck_assert_int_eq(stat(at("theirs"), &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    ck_assert_int_eq(st.st_uid, other);
    /* one that appears while the output is written is not replaced either */
    ck_assert_int_eq(write_file_atomically(AT_FDCWD, at("late"), fill_and_plant, at("late"), NULL), -EPERM);
    ck_assert_int_eq(stat(at("late"), &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    ck_assert_int_eq(st.st_uid, other);
    const char *two[] = {"theirs", "late", NULL};
    ck_assert_int_eq(others(two), 0);
    /* group-writable and sticky: shared too */
    ck_assert_int_eq(chmod(dir, 01770), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("theirs")), -EPERM);
    /* not sticky: whoever may write the directory may replace what is in it */
    ck_assert_int_eq(chmod(dir, 0777), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("theirs")), 0);
    /* the directory's owner's file, in a directory it owns, is not a stranger's */
    ck_assert_int_eq(chmod(dir, 01777), 0);
    ck_assert_int_eq(chown(dir, other, other), 0);
    ck_assert_int_eq(outfile_check(AT_FDCWD, at("theirs")), 0);
    cleanup();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("outfile");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_check_kinds);
    tcase_add_test(tc, test_atomic_without_tmpfile);
    tcase_add_test(tc, test_atomic_replaces);
    tcase_add_test(tc, test_create);
    tcase_add_test(tc, test_create_keep);
    tcase_add_test(tc, test_append);
    tcase_add_test(tc, test_foreign);
    suite_add_tcase(s, tc);
    return check_run(s);
}

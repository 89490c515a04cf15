/* outfile.h — how resmon-run opens the files it writes: the one policy for every output path.
 *
 * resmon-run often runs as root in a directory others can write to (/tmp, a shared workspace),
 * where another user may have put something at an output path before it starts. Every output
 * goes through this module, which promises, whatever is found at the path:
 *
 *  - No open blocks: paths are opened O_NONBLOCK | O_NOFOLLOW | O_NOCTTY and what is there must
 *    be a regular file. A symbolic link gives -ELOOP, a directory -EISDIR, a FIFO, device or
 *    socket -EINVAL; nothing is ever written through them.
 *  - No file of someone else's is adopted in a shared directory (sticky, and writable by its
 *    group or by all): a file there owned neither by resmon-run's user nor by the directory's
 *    owner is neither written into nor replaced, -EPERM (the rule of the kernel's
 *    protected_regular=2, applied whatever that setting is).
 *  - What resmon-run writes is a file it created itself (O_EXCL or O_TMPFILE): a file found at
 *    the path is replaced, never reopened, so no descriptor someone opened on it beforehand
 *    reaches what resmon-run writes.
 *  - Temporary files have no name while they are written (O_TMPFILE) and get an unguessable one
 *    (64 random bits) for the instant between their link and their rename; where the filesystem
 *    has no O_TMPFILE they are created under such a name with O_EXCL.
 *
 * The exception is a file the CI system hands over to be appended to ($GITHUB_STEP_SUMMARY):
 * outfile_append() opens the file that is there, under the same checks.
 *
 * outfile_why() turns these errors into words for the messages. */
#ifndef RESMON_OUTFILE_H
#define RESMON_OUTFILE_H

#include <sys/types.h>

/* What is at dirfd/path, judged before it is replaced: 0 (a regular file that may be replaced),
 * -ENOENT (nothing), -ELOOP, -EISDIR, -EINVAL or -EPERM as above, or another -errno. */
int outfile_check(int dirfd, const char *path);

/* A new file at dirfd/path, created with O_EXCL and mode (less the umask; a file resmon-run
 * reads back is given one without write permission for others), opened with flags (O_RDWR,
 * O_APPEND ...) plus O_CLOEXEC, blocking. A regular file already there that outfile_check()
 * allows is removed first, unless it is locked (flock) by another process: -EBUSY. */
int outfile_create(int dirfd, const char *path, int flags, mode_t mode, int *ret_fd);
/* The same; a file removed to take the path is not closed but given in *ret_removed (else -1):
 * its last close is when the kernel frees its blocks (0.3-0.5 ms for a profile of some kilobytes
 * on ext4 here), which the caller may leave to a process of its that is not on the way to its
 * exit (watchdog.h). */
int outfile_create_keep(int dirfd, const char *path, int flags, mode_t mode, int *ret_fd, int *ret_removed);

/* The file at path opened to append to (created, mode 0666 less the umask, when absent), for a
 * file the CI system owns and names. Same checks; blocking once it is known to be a regular
 * file. flags: O_WRONLY | O_APPEND or O_RDWR (then nothing is created). 0 or -errno. */
int outfile_append(const char *path, int flags, int *ret_fd);

/* Write a file at dirfd/path atomically: fill(ctx, fd) writes a temporary file in the same
 * directory (see above; mode 0666 less the umask), which is fsynced and renamed over path, and the
 * directory is fsynced; on failure no temporary is left and path is untouched. path is first
 * judged by outfile_check(), and a file that appears there while the temporary is written is
 * judged before it is replaced (RENAME_NOREPLACE where the filesystem has it). keep_fd not NULL: the file is locked (flock) before the rename and
 * stays open in *keep_fd (the fd there before is closed). Returns 0, fill's negative return, or
 * -errno. */
int write_file_atomically(int dirfd, const char *path, int (*fill)(void *ctx, int fd), void *ctx, int *keep_fd);
/* The same, with OUTFILE_NO_SYNC in flags: neither the file nor the directory is fsynced (a crash
 * of the machine soon after may leave the old file, or an empty one, at path; a process killed
 * any time after the rename leaves the new one whole). */
#define OUTFILE_NO_SYNC 1u
int write_file_atomically_flags(int dirfd, const char *path, int (*fill)(void *ctx, int fd), void *ctx, int *keep_fd,
                                unsigned flags);

/* Words for an error of this module on path: "it is a FIFO, not a regular file", "it is a
 * symbolic link (refused)", "it belongs to another user in a shared directory (refused)", else
 * strerror(-err). A static or thread-unsafe buffer: use it at once. */
const char *outfile_why(int err, int dirfd, const char *path);

#endif

/* profile_recover.c — see profile.h: what kind of file a run left (profile_detect), and its
 * recovery into a profile (profile_recover): a stream is converted as a run's own end would have
 * converted it, a full profile is left as it is or copied where asked.
 */
#include "profile/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <zlib.h>

#include "base/jscan.h"
#include "base/outfile.h"
#include "base/util.h"
#include "profile/streamread.h"

#define CHUNK (1u << 20)

enum profile_kind profile_detect(int fd)
{
    char head[64];
    ssize_t n;
    do
        n = pread(fd, head, sizeof head, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return PROFILE_KIND_OTHER;
    if (sline_is_meta(head, (size_t)n))
        return PROFILE_KIND_STREAM;
    if (n >= 2 && (unsigned char)head[0] == 0x1f && (unsigned char)head[1] == 0x8b)
        return PROFILE_KIND_FULL; /* only full profiles are ever compressed */
    const char *p = head, *e = head + n;
    p = js_skip_ws(p, e);
    if (p >= e || *p != '{')
        return PROFILE_KIND_OTHER;
    p = js_skip_ws(p + 1, e);
    if ((size_t)(e - p) < 6 || memcmp(p, "\"meta\"", 6) != 0)
        return PROFILE_KIND_OTHER;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < 2)
        return PROFILE_KIND_OTHER;
    char tail[64];
    off_t at = st.st_size > (off_t)sizeof tail ? st.st_size - (off_t)sizeof tail : 0;
    do
        n = pread(fd, tail, sizeof tail, at);
    while (n < 0 && errno == EINTR);
    while (n > 0 && (tail[n - 1] == ' ' || tail[n - 1] == '\n' || tail[n - 1] == '\r' || tail[n - 1] == '\t'))
        n--;
    return n > 0 && tail[n - 1] == '}' ? PROFILE_KIND_FULL : PROFILE_KIND_OTHER;
}

bool profile_path_wants_gzip(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

struct copy_fill {
    int in_fd;
    bool gzip;
    uint64_t bytes;
};

/* A file's bytes into fd, compressed when asked and not gzip already. */
static int fill_copy(void *ctx, int fd)
{
    struct copy_fill *f = ctx;
    _cleanup_free_ char *buf = malloc(CHUNK), *zbuf = malloc(CHUNK);
    if (!buf || !zbuf)
        return -ENOMEM;
    z_stream zs = {0};
    bool gz = false;
    uint64_t off = 0;
    int r = 0;
    for (;;) {
        ssize_t n;
        do
            n = pread(f->in_fd, buf, CHUNK, (off_t)off);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            r = -errno;
            break;
        }
        if (off == 0 && f->gzip && !(n >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b)) {
            if (deflateInit2(&zs, 3, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
                r = -ENOMEM;
                break;
            }
            gz = true;
        }
        off += (uint64_t)n;
        if (!gz) {
            if (n == 0)
                break;
            if ((r = write_all(fd, buf, (size_t)n)) < 0)
                break;
            f->bytes += (uint64_t)n;
            continue;
        }
        zs.next_in = (Bytef *)buf;
        zs.avail_in = (uInt)n;
        int zr;
        do {
            zs.next_out = (Bytef *)zbuf;
            zs.avail_out = CHUNK;
            zr = deflate(&zs, n ? Z_NO_FLUSH : Z_FINISH);
            size_t have = CHUNK - zs.avail_out;
            if (have && (r = write_all(fd, zbuf, have)) < 0)
                break;
            f->bytes += have;
        } while (zs.avail_out == 0 || (n == 0 && zr != Z_STREAM_END && zr != Z_STREAM_ERROR));
        if (r < 0 || n == 0)
            break;
    }
    if (gz)
        deflateEnd(&zs);
    return r;
}

int profile_recover(const char *in_path, const char *out_path, bool gzip, struct profile_stats *ret_stats)
{
    if (!in_path)
        return -EINVAL;
    /* O_NONBLOCK: a FIFO at the path must be refused, not waited on. */
    _cleanup_close_ int fd = open(in_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    if (!S_ISREG(st.st_mode))
        return -EINVAL;
    switch (profile_detect(fd)) {
    case PROFILE_KIND_FULL: {
        /* Nothing to convert; asked to put it elsewhere, it is copied there (compressed when
         * asked, unless it is already). */
        if (!out_path || strcmp(out_path, in_path) == 0)
            return PROFILE_RECOVER_ALREADY_FULL;
        struct copy_fill f = {fd, gzip};
        int r = write_file_atomically(AT_FDCWD, out_path, fill_copy, &f, NULL);
        if (r == 0 && ret_stats)
            *ret_stats = (struct profile_stats){.bytes = f.bytes};
        return r < 0 ? r : PROFILE_RECOVER_ALREADY_FULL;
    }
    case PROFILE_KIND_OTHER:
        return -EINVAL;
    case PROFILE_KIND_STREAM:
        break;
    }
    /* A stream a live run is writing: converting it in place would take its path from under it. */
    if ((!out_path || strcmp(out_path, in_path) == 0) && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
        return -EBUSY;
    struct profile_end end = {.end_ms = -1, .open_status = "INCOMPLETE", .gzip = gzip, .recovered = true};
    return profile_finalize(fd, AT_FDCWD, out_path ? out_path : in_path, &end, ret_stats);
}

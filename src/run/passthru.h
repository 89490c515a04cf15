/* passthru.h — one of the command's output streams passed through to ours, byte for byte.
 *
 * The supervisor reads the command's pipe (non-blocking) and writes what it read to our stdout
 * or stderr before it reads again; each chunk read is handed to the caller too (for the test-log
 * parsers), after it has been passed on, so parsing never delays the bytes. Its arrival time is
 * read before the write: what a reader downstream does on seeing the bytes comes after it.
 *
 * Our end: a pipe gets a private non-blocking open file description (through /proc/self/fd), so
 * a slow reader never blocks the supervisor's loop (samples and deadlines keep their time), while
 * the description the caller shares keeps its flags. Files and terminals are written blocking:
 * their writes do not wait on a reader.
 *
 * Downstream gone: when our pipe's reader goes away (`| head -1`), the command must see what it
 * would have seen writing there itself — EPIPE or SIGPIPE at its next write. So the read end of
 * the command's pipe is closed as soon as we learn it: at a write's EPIPE, or when poll reports
 * an error on our end while nothing is pending (passthru_events asks for it). What the command
 * wrote before is lost, as it would have been.
 *
 * The read tells "empty now" (the command is alive and silent, or its output is all read) from
 * "no more will come" (every writer closed the pipe), so a supervisor can drain a pipe to its
 * last byte when the command is gone without waiting for leftovers that keep it open.
 */
#ifndef RESMON_PASSTHRU_H
#define RESMON_PASSTHRU_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct passthru;

/* from_fd: our read end of the command's pipe (made non-blocking; owned from now on). to_fd: our
 * stdout or stderr (borrowed; a pipe gets a private non-blocking description, owned). */
int passthru_new(int from_fd, int to_fd, struct passthru **ret);
void passthru_free(struct passthru *p);

enum passthru_read {
    PT_DATA,  /* *ret_buf, *ret_len: a chunk, already passed on (or pending: passthru_pending) */
    PT_EMPTY, /* nothing to read now (or something is still pending downstream) */
    PT_EOF,   /* the pipe is closed: every writer is gone, or downstream is (read end closed) */
};
/* Read one chunk when nothing is pending, and pass it on at once as far as downstream takes it.
 * The chunk stays valid until the next call. *ret_ns: its arrival (now_ns), taken after the read
 * and before the write, so nothing that follows from the bytes downstream can precede it. */
enum passthru_read passthru_read(struct passthru *p, const char **ret_buf, size_t *ret_len, uint64_t *ret_ns);

/* Write what is pending. Returns true when nothing is left pending. */
bool passthru_flush(struct passthru *p);
bool passthru_pending(const struct passthru *p);
/* What was passed on so far went to the same file as fd (our stdout and stderr may be one) and
 * ends in the middle of a line: what we write there ourselves (a summary, an annotation) must
 * start with a newline to begin a line of its own. passthru_line_ended: we wrote that newline. */
bool passthru_mid_line(const struct passthru *p, int fd);
void passthru_line_ended(struct passthru *p);
/* The pipe is closed (EOF read, or closed because downstream is gone). */
bool passthru_closed(const struct passthru *p);
/* Downstream went away (EPIPE or a poll error on our end). */
bool passthru_downstream_gone(const struct passthru *p);
/* Close the read end (what is still in the pipe is left there). */
void passthru_close(struct passthru *p);

/* What to poll: the fd and events for this stream's next step (POLLIN on the pipe, or POLLOUT on
 * our end while something is pending downstream), and our end for errors only (events 0) when it
 * is a pipe and nothing is pending, to learn at once that its reader is gone. Returns how many
 * pollfds it filled (0..2) into pfd[0..1]. */
int passthru_events(const struct passthru *p, struct pollfd *pfd);
/* After poll: the revents for the pollfds passthru_events filled (n of them). Does the step they
 * allow: flushes when our end is writable, notes downstream gone on an error (and closes the
 * read end). Returns true when the pipe is readable (call passthru_read). */
bool passthru_handle(struct passthru *p, const struct pollfd *pfd, int n);

#endif

/* log.h — the program's voice on stderr. Only the program layer (main, supervise) logs; modules
 * return -errno and let their caller add context once.
 *
 * Every message is one line prefixed with the program name ("resmon-run: ..."), written with a
 * single write(2) so concurrent output from the command does not tear it. A closed or broken
 * stderr is ignored: logging never changes what resmon-run does or the status it exits with.
 */
#ifndef RESMON_LOG_H
#define RESMON_LOG_H

#include <stdbool.h>

/* Set once at start-up from argv[0]'s basename (the name users invoked). */
void log_set_program(const char *name);
const char *log_program(void);

void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* As log_warn, with ": strerror(-err)" appended. */
void log_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

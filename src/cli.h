/* cli.h — the command line: argv into the options a run is given (run/options.h), and --help.
 * The pure parsers of durations, sizes and signals it uses are base/parse.h.
 *
 * Two synopses share one parser:
 *   resmon-run [OPTION]... [--] COMMAND [ARG]...            (the default)
 *   resmon-timeout [OPTION]... DURATION COMMAND [ARG]...    (argv[0] ends in "timeout")
 * Option parsing stops at the first non-option, so the command's own options are left alone.
 * In timeout mode the defaults are GNU's: no profile unless -o, leftovers are not killed unless
 * --kill-leftovers, no summary.
 *
 * The options are one table (cli.c): each row is an option's long and short names, its argument,
 * what it sets and its --help text, so an option is added in one place; getopt_long reads the
 * table and --help prints it. --parse's list of formats is testlog/registry.h's.
 */
#ifndef RESMON_CLI_H
#define RESMON_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/options.h"

/* Parse argv. Returns 0 (o filled), or EXIT_CANCELED after printing a one-line usage error. --help
 * and --version print to stdout and set action CLI_EXIT. */
int cli_parse(int argc, char **argv, struct options *o);
void cli_release(struct options *o);

/* The usage synopsis (--help's first lines; the man page's SYNOPSIS says the same). */
void cli_print_help(bool timeout_mode);

#endif

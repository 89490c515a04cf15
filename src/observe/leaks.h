/* leaks.h — the processes a test leaves behind, and which test left each one.
 *
 * When a test ends (testlog_probe.leaked), its candidates are the processes the sampler knows that
 * started since the test did (sampler_started_since); those alive now are its leftovers, checked
 * in /proc (pid and start time: without the process connector the sampler learns of ends only at
 * samples). The command itself is none, and neither is a step of the go tool (a process whose
 * line of ancestors reaches the go tool through one of its children that started during the
 * test: compile, vet, link, another package's test binary; a test's own test binary started
 * before it). Each leftover is remembered with the test (the last
 * LEAKS_KEPT), so that the processes the run ends with can name the test that started them.
 */
#ifndef RESMON_LEAKS_H
#define RESMON_LEAKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "observe/sampler.h"

#define LEAKS_KEPT 256     /* leftovers remembered with their test */
#define LEAK_CANDIDATES 64 /* a test's candidates checked */

struct leaks {
    struct leak {
        pid_t pid;
        uint64_t starttime; /* with pid, the process */
        char *test;
    } kept[LEAKS_KEPT];
    size_t n; /* remembered so far (the last LEAKS_KEPT are kept) */
};

/* The processes test (which started at since_ns) left alive: how many, their command lines
 * joined by "; " into cmds[0..cap) (cap > 0); each remembered with test. command: the command's
 * pid. s may be NULL (no sampler: none). */
size_t leaks_probe(struct leaks *l, const struct sampler *s, pid_t command, const char *test, uint64_t since_ns,
                   char *cmds, size_t cap);
/* The test that left pid behind, when one did (NULL: none known). */
const char *leaks_test_of(const struct leaks *l, pid_t pid);
void leaks_release(struct leaks *l);

#endif

/* check_run.h — how every unit test program ends: run its suite (Check's fork mode, the per-case
 * timeouts the suite set) and exit non-zero when any check failed or errored; 77 (automake's
 * SKIP) when none failed but a case could not run here, so that a skip is reported as one.
 *
 *   if (!possible_here) { check_skip("no process connector here: skipped\n"); return; }
 *
 * A case runs in a child of the runner (fork mode), so the count lives in a shared mapping made
 * before the run. */
#ifndef RESMON_CHECK_RUN_H
#define RESMON_CHECK_RUN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static int *check_skips_;

static inline void check_skip_count_(void)
{
    if (check_skips_)
        __atomic_add_fetch(check_skips_, 1, __ATOMIC_SEQ_CST);
}

/* Say why on stderr (printf arguments) and count the case as skipped; the case then returns. */
#define check_skip(...) (fprintf(stderr, __VA_ARGS__), check_skip_count_())

static inline int check_run(Suite *s)
{
    void *m = mmap(NULL, sizeof *check_skips_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    check_skips_ = m == MAP_FAILED ? NULL : m;
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    int skipped = check_skips_ ? *check_skips_ : 0;
    if (failed)
        return EXIT_FAILURE;
    if (skipped) {
        fprintf(stderr, "%d case(s) skipped here: the program reports a skip\n", skipped);
        return 77;
    }
    return EXIT_SUCCESS;
}

#endif

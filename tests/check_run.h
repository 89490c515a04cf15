/* check_run.h — how every unit test program ends: run its suite (Check's fork mode, the per-case
 * timeouts the suite set) and exit non-zero when any check failed or errored. */
#ifndef RESMON_CHECK_RUN_H
#define RESMON_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif

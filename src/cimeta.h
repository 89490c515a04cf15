/* cimeta.h — what the CI a run is in says about it, as profile metadata (profile-format.md §3:
 * extra meta keys, merged after the standard ones).
 *
 * Taskcluster (Mozilla's CI): device from TASKCLUSTER_WORKER_TYPE, sourceURL from
 * MOZ_SOURCE_REPO + "/rev/" + MOZ_SOURCE_CHANGESET, appBuildID from TASK_ID — the keys mozharness
 * writes into its resource-usage profiles, so Mozilla's tools find them where they look.
 */
#ifndef RESMON_CIMETA_H
#define RESMON_CIMETA_H

#include <stddef.h>

struct cimeta {
    const char *keys[16], *values[16];
    size_t n;
    char *owned[16]; /* values built here (freed by cimeta_release) */
    size_t n_owned;
};

/* Read the environment into m (values point into the environment or m->owned). */
void cimeta_collect(struct cimeta *m);
void cimeta_release(struct cimeta *m);

#endif

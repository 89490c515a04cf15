/* cimeta.h — what the CI a run is in says about it, as profile metadata (profile-format.md §3:
 * extra meta keys, merged after the standard ones).
 *
 * Taskcluster (Mozilla's CI): device from TASKCLUSTER_WORKER_TYPE, sourceURL from
 * MOZ_SOURCE_REPO + "/rev/" + MOZ_SOURCE_CHANGESET, appBuildID from TASK_ID — the keys mozharness
 * writes into its resource-usage profiles, so Mozilla's tools find them where they look.
 *
 * The other CIs fill the same keys with their own variables (device: the runner or agent;
 * sourceURL: the commit's page; appBuildID: the run or job id), and add ci (its name),
 * ciRepository, ciRevision and ciJobURL, the link back to the job:
 *   GitHub Actions (GITHUB_ACTIONS)  RUNNER_NAME; GITHUB_SERVER_URL/GITHUB_REPOSITORY/commit/
 *                                    GITHUB_SHA; GITHUB_RUN_ID; ciRunAttempt GITHUB_RUN_ATTEMPT;
 *                                    the job .../actions/runs/RUN_ID/attempts/ATTEMPT
 *   GitLab (GITLAB_CI)               CI_RUNNER_DESCRIPTION; CI_PROJECT_URL/-/commit/CI_COMMIT_SHA;
 *                                    CI_JOB_ID; CI_PROJECT_PATH; CI_JOB_URL
 *   Buildkite (BUILDKITE)            BUILDKITE_AGENT_NAME; BUILDKITE_JOB_ID; BUILDKITE_REPO,
 *                                    BUILDKITE_COMMIT; BUILDKITE_BUILD_URL#BUILDKITE_JOB_ID
 *   Jenkins (JENKINS_URL)            NODE_NAME; BUILD_TAG; GIT_URL, GIT_COMMIT; BUILD_URL
 *   Taskcluster (otherwise)          as above; ci "taskcluster" with TASK_ID, the job
 *                                    TASKCLUSTER_ROOT_URL/tasks/TASK_ID
 * A value built from several variables is left out unless all of them are set.
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

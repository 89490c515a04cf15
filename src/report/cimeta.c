/* cimeta.c — see cimeta.h. */
#include "report/cimeta.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static void add(struct cimeta *m, const char *key, const char *value)
{
    if (m->n < ARRAY_SIZE(m->keys) && value && *value) {
        m->keys[m->n] = key;
        m->values[m->n++] = value;
    }
}

static bool set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

/* key = the parts joined, when every variable among them ("$NAME") is set; NULL ends them. */
static void add_joined(struct cimeta *m, const char *key, ...) __attribute__((sentinel));
static void add_joined(struct cimeta *m, const char *key, ...)
{
    char buf[2048];
    size_t len = 0;
    va_list ap;
    va_start(ap, key);
    bool ok = true;
    for (const char *p; ok && (p = va_arg(ap, const char *));) {
        const char *v = p;
        if (*p == '$') { /* a variable */
            v = getenv(p + 1);
            ok = v && *v;
        }
        if (ok) {
            int n = snprintf(buf + len, sizeof buf - len, "%s", v);
            ok = n >= 0 && (size_t)n < sizeof buf - len;
            len += ok ? (size_t)n : 0;
        }
    }
    va_end(ap);
    char *s;
    if (ok && m->n_owned < ARRAY_SIZE(m->owned) && (s = strdup(buf))) {
        m->owned[m->n_owned++] = s;
        add(m, key, s);
    }
}

void cimeta_collect(struct cimeta *m)
{
    *m = (struct cimeta){0};
    if (set("GITHUB_ACTIONS")) {
        add(m, "ci", "github");
        add(m, "device", getenv("RUNNER_NAME"));
        add_joined(m, "sourceURL", "$GITHUB_SERVER_URL", "/", "$GITHUB_REPOSITORY", "/commit/", "$GITHUB_SHA", NULL);
        add(m, "appBuildID", getenv("GITHUB_RUN_ID"));
        add(m, "ciRepository", getenv("GITHUB_REPOSITORY"));
        add(m, "ciRevision", getenv("GITHUB_SHA"));
        add(m, "ciRunAttempt", getenv("GITHUB_RUN_ATTEMPT"));
        if (set("GITHUB_RUN_ATTEMPT"))
            add_joined(m, "ciJobURL", "$GITHUB_SERVER_URL", "/", "$GITHUB_REPOSITORY", "/actions/runs/",
                       "$GITHUB_RUN_ID", "/attempts/", "$GITHUB_RUN_ATTEMPT", NULL);
        else
            add_joined(m, "ciJobURL", "$GITHUB_SERVER_URL", "/", "$GITHUB_REPOSITORY", "/actions/runs/",
                       "$GITHUB_RUN_ID", NULL);
    } else if (set("GITLAB_CI") || set("CI_JOB_ID")) {
        add(m, "ci", "gitlab");
        add(m, "device", getenv("CI_RUNNER_DESCRIPTION"));
        add_joined(m, "sourceURL", "$CI_PROJECT_URL", "/-/commit/", "$CI_COMMIT_SHA", NULL);
        add(m, "appBuildID", getenv("CI_JOB_ID"));
        add(m, "ciRepository", getenv("CI_PROJECT_PATH"));
        add(m, "ciRevision", getenv("CI_COMMIT_SHA"));
        add(m, "ciJobURL", getenv("CI_JOB_URL"));
    } else if (set("BUILDKITE")) {
        add(m, "ci", "buildkite");
        add(m, "device", getenv("BUILDKITE_AGENT_NAME"));
        add(m, "appBuildID", getenv("BUILDKITE_JOB_ID"));
        add(m, "ciRepository", getenv("BUILDKITE_REPO"));
        add(m, "ciRevision", getenv("BUILDKITE_COMMIT"));
        add_joined(m, "ciJobURL", "$BUILDKITE_BUILD_URL", "#", "$BUILDKITE_JOB_ID", NULL);
    } else if (set("JENKINS_URL")) {
        add(m, "ci", "jenkins");
        add(m, "device", getenv("NODE_NAME"));
        add(m, "appBuildID", getenv("BUILD_TAG"));
        add(m, "ciRepository", getenv("GIT_URL"));
        add(m, "ciRevision", getenv("GIT_COMMIT"));
        add(m, "ciJobURL", getenv("BUILD_URL"));
    } else {
        /* Taskcluster, with mozharness's keys: whichever of them the environment has */
        add(m, "device", getenv("TASKCLUSTER_WORKER_TYPE"));
        add_joined(m, "sourceURL", "$MOZ_SOURCE_REPO", "/rev/", "$MOZ_SOURCE_CHANGESET", NULL);
        add(m, "appBuildID", getenv("TASK_ID"));
        if (set("TASK_ID"))
            add(m, "ci", "taskcluster");
        add_joined(m, "ciJobURL", "$TASKCLUSTER_ROOT_URL", "/tasks/", "$TASK_ID", NULL);
    }
}

void cimeta_release(struct cimeta *m)
{
    for (size_t i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    m->n_owned = m->n = 0;
}

/* cimeta.c — see cimeta.h. */
#include "cimeta.h"

#include <stdio.h>
#include <stdlib.h>

#include "util.h"

static void add(struct cimeta *m, const char *key, const char *value)
{
    if (m->n < ARRAY_SIZE(m->keys) && value && *value) {
        m->keys[m->n] = key;
        m->values[m->n++] = value;
    }
}

void cimeta_collect(struct cimeta *m)
{
    *m = (struct cimeta){0};
    add(m, "device", getenv("TASKCLUSTER_WORKER_TYPE"));
    const char *repo = getenv("MOZ_SOURCE_REPO"), *rev = getenv("MOZ_SOURCE_CHANGESET");
    char *url;
    if (repo && *repo && rev && *rev && asprintf(&url, "%s/rev/%s", repo, rev) >= 0) {
        m->owned[m->n_owned++] = url;
        add(m, "sourceURL", url);
    }
    add(m, "appBuildID", getenv("TASK_ID"));
}

void cimeta_release(struct cimeta *m)
{
    for (size_t i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    m->n_owned = m->n = 0;
}

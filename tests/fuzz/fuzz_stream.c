/* Fuzz target for the stream reader: any bytes as a stream, converted to a full profile. The
 * converter must never crash, and whatever it accepts must come out as one valid JSON document
 * (checked here with cJSON, which the input never reaches directly). */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"
#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int in = memfd_create("in", MFD_CLOEXEC), out = memfd_create("out", MFD_CLOEXEC);
    if (in < 0 || out < 0)
        abort();
    if (write_all(in, data, size) < 0)
        abort();
    struct profile_end end = {.end_ms = -1, .open_status = "INCOMPLETE"};
    struct profile_stats st;
    int r = profile_convert(in, out, &end, &st);
    if (r == 0) {
        off_t n = lseek(out, 0, SEEK_END);
        char *buf = malloc((size_t)n + 1);
        if (!buf || pread(out, buf, (size_t)n, 0) != n)
            abort();
        buf[n] = '\0';
        cJSON *root = cJSON_ParseWithLength(buf, (size_t)n);
        if (!root || !cJSON_IsObject(root))
            abort();
        /* the markers: the run's thread's, and those of marker graphs that stayed at zero in the
         * hidden thread of pid "zero" */
        uint64_t total = 0;
        const cJSON *th;
        int k = 0;
        cJSON_ArrayForEach(th, cJSON_GetObjectItemCaseSensitive(root, "threads"))
        {
            const cJSON *pid = cJSON_GetObjectItemCaseSensitive(th, "pid");
            bool zero = cJSON_IsString(pid) && !strcmp(pid->valuestring, "zero");
            if (k++ && !zero) /* not the run's thread, nor the hidden one */
                continue;
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(th, "markers");
            const cJSON *len = cJSON_GetObjectItemCaseSensitive(m, "length");
            if (!cJSON_IsNumber(len) ||
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "data")) != (int)len->valuedouble)
                abort();
            total += (uint64_t)len->valuedouble;
        }
        if (total != st.markers)
            abort();
        cJSON_Delete(root);
        free(buf);
    } else if (r != -EINVAL)
        abort();
    close(in);
    close(out);
    return 0;
}

/* Names of the test-log formats for --parse (see testlog.h). */
#include "testlog.h"

#include <errno.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned bit;
} names[] = {
    {"mozlog", TL_FMT_MOZLOG}, {"tbpl", TL_FMT_TBPL},         {"mach", TL_FMT_MACH},
    {"tap", TL_FMT_TAP},       {"go", TL_FMT_GO},             {"gtest", TL_FMT_GTEST},
    {"pytest", TL_FMT_PYTEST}, {"unittest", TL_FMT_UNITTEST}, {"libtest", TL_FMT_LIBTEST},
    {"check", TL_FMT_CHECK},
};

int testlog_parse_formats(const char *arg, unsigned *ret_mask)
{
    if (strcmp(arg, "auto") == 0 || strcmp(arg, "all") == 0) {
        *ret_mask = TL_FMT_ALL;
        return 0;
    }
    if (strcmp(arg, "none") == 0) {
        *ret_mask = 0;
        return 0;
    }
    unsigned mask = 0;
    const char *p = arg;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        size_t i;
        for (i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == len && strncmp(names[i].name, p, len) == 0)
                break;
        if (i == sizeof names / sizeof names[0])
            return -EINVAL;
        mask |= names[i].bit;
        p += len;
        if (*p == ',' && *++p == '\0')
            return -EINVAL;
    }
    if (!mask)
        return -EINVAL;
    *ret_mask = mask;
    return 0;
}

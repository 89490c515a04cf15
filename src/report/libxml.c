/* libxml.c — see libxml.h. */
#define LIBXML_BINDING
#include "report/libxml.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

struct libxml_api libxml;

static const struct {
    const char *name;
    size_t off;
} calls[] = {
#define CALL(f) {"xml" #f, offsetof(struct libxml_api, f)}
    CALL(InitParser),          CALL(OutputBufferCreateIO),    CALL(OutputBufferClose),
    CALL(NewTextWriter),       CALL(FreeTextWriter),          CALL(TextWriterSetIndent),
    CALL(TextWriterSetIndentString), CALL(TextWriterStartDocument), CALL(TextWriterEndDocument),
    CALL(TextWriterStartElement), CALL(TextWriterEndElement), CALL(TextWriterWriteAttribute),
    CALL(TextWriterWriteString), CALL(TextWriterFlush), CALL(SetGenericErrorFunc),
#undef CALL
};

/* Without a structured handler the library's errors all go through the generic one. */
static void quiet(void *ctx, const char *fmt, ...) {}

int libxml_load(const char **ret_error)
{
    static int state; /* 0: not tried, 1: loaded, -1: failed */
    static const char *error;
    if (state == 0) {
        void *h = dlopen(XML_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            error = dlerror();
            state = -1;
        } else {
            state = 1;
            for (size_t i = 0; i < sizeof calls / sizeof calls[0] && state == 1; i++) {
                void *f = dlsym(h, calls[i].name);
                if (!f) {
                    error = "a function the report needs is missing from " XML_SONAME;
                    state = -1;
                } else {
                    /* POSIX: a function's address from dlsym converts to a function pointer */
                    memcpy((char *)&libxml + calls[i].off, &f, sizeof f);
                }
            }
            if (state == 1) {
                libxml.InitParser();
                libxml.SetGenericErrorFunc(NULL, quiet);
            }
        }
    }
    if (state < 0 && ret_error)
        *ret_error = error ? error : "cannot load " XML_SONAME;
    return state > 0 ? 0 : -1;
}

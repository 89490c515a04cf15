/* Fuzz target: the mozlog parser, alone and through the test-log core. */
#include "fuzz_testlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_testlog(data, size, TL_FMT_MOZLOG, &tl_format_mozlog);
}

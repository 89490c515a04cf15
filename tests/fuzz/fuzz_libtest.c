/* Fuzz target for the libtest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_libtest
#include "fuzz_testlog_format.h"

/* Fuzz target for the ctest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_ctest
#include "fuzz_testlog_format.h"

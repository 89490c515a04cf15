/* Fuzz target for the vitest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_vitest
#include "fuzz_testlog_format.h"

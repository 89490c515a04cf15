/* Fuzz target for the catch2 test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_catch2
#include "fuzz_testlog_format.h"

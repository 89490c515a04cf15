/* Fuzz target for the check test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_check
#include "fuzz_testlog_format.h"

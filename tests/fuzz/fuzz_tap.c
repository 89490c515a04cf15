/* Fuzz target for the tap test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_tap
#include "fuzz_testlog_format.h"

/* Fuzz target for the jest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_jest
#include "fuzz_testlog_format.h"

/* Fuzz target for the teamcity test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_teamcity
#include "fuzz_testlog_format.h"

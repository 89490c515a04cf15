/* Fuzz target for the gtest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_gtest
#include "fuzz_testlog_format.h"

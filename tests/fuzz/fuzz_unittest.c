/* Fuzz target for the unittest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_unittest
#include "fuzz_testlog_format.h"

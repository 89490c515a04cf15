/* Fuzz target for the mocha test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_mocha
#include "fuzz_testlog_format.h"

/* Fuzz target for the rspec test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_rspec
#include "fuzz_testlog_format.h"

/* Fuzz target for the doctest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_doctest
#include "fuzz_testlog_format.h"

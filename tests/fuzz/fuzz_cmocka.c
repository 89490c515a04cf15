/* Fuzz target for the cmocka test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_cmocka
#include "fuzz_testlog_format.h"

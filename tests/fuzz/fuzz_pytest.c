/* Fuzz target for the pytest test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_pytest
#include "fuzz_testlog_format.h"

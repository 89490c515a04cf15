/* Fuzz target for the go test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_go
#include "fuzz_testlog_format.h"

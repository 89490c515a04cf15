/* Fuzz target for the meson test-log parser (see fuzz_testlog_format.h). */
#define FUZZ_FORMAT tl_format_meson
#include "fuzz_testlog_format.h"

/* testlog/registry.h — the test-log formats, in the priority order of test-logs.md: the one list
 * a new format is added to (its parser, testlog/formats/<var>.c, speaks testlog/event.h).
 *
 *   TL_FORMAT(var, NAME, alias)
 *     var    the parser is `const struct tl_format tl_format_<var>`, and --parse names it <var>
 *     NAME   its bit is TL_FMT_<NAME> (testlog.h), set as the parser's .bit
 *     alias  another name --parse accepts for it, or NULL
 *
 * Included with TL_FORMAT defined, by testlog.h (the bits), testlog/event.h (the parsers'
 * declarations), testlog.c (the table the core tries in this order) and cli.c (--help's list of
 * --parse formats). No include guard.
 */
TL_FORMAT(mozlog, MOZLOG, NULL)
TL_FORMAT(tbpl, TBPL, NULL)
TL_FORMAT(mach, MACH, NULL)
/* before the text formats: vitest and jest take what a test printed (vitest's "stdout |" blocks,
 * jest's console blocks) whole, as that test's output */
TL_FORMAT(vitest, VITEST, NULL)
TL_FORMAT(jest, JEST, NULL)
TL_FORMAT(tap, TAP, NULL)
TL_FORMAT(go, GO, "gotest")
TL_FORMAT(gtest, GTEST, "googletest")
TL_FORMAT(pytest, PYTEST, NULL)
TL_FORMAT(unittest, UNITTEST, NULL)
TL_FORMAT(libtest, LIBTEST, NULL)
TL_FORMAT(check, CHECK, NULL)
TL_FORMAT(ctest, CTEST, NULL)
TL_FORMAT(meson, MESON, NULL)
TL_FORMAT(teamcity, TEAMCITY, NULL)
TL_FORMAT(cmocka, CMOCKA, NULL)
TL_FORMAT(catch2, CATCH2, NULL)
TL_FORMAT(doctest, DOCTEST, NULL)
TL_FORMAT(rspec, RSPEC, NULL)
/* last: any indented line may be one of its suite titles, which it takes from no one */
TL_FORMAT(mocha, MOCHA, NULL)

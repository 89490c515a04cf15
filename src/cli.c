/* cli.c — see cli.h. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "base/parse.h"
#include "base/util.h"
#include "observe/cpuprof.h"
#include "observe/forensics.h"
#include "profile/profile.h"
#include "run/sandbox.h"
#include "testlog/testlog.h"

/* ---- an option ----------------------------------------------------------------------------- */

/* What reading the options keeps besides the options themselves. */
struct parser {
    struct options *o;
    int argc;
    char **argv;
    /* --dump-budget, --dump-file and --dump turn the dump on (as resmon-timeout too), unless
     * --no-dump is given, wherever it is */
    bool asked_dump, no_dump;
};

/* One option: how it is written, what it sets, and its --help lines. The options are one table of
 * these (option_table, below): getopt_long's tables are made from it, and --help prints it in its
 * order (tests/man.sh holds the manual to the same options). */
struct cli_option {
    const char *name; /* the long option; NULL: a heading of --help */
    char letter;      /* the short option, or 0 */
    /* the argument as --help writes it: one starting with '=' is the option's argument, "[=" an
     * optional one (given as --opt=ARG only); any other (--compare's " OLD NEW", --mark's words)
     * is read from the operands after the options */
    const char *arg;
    /* what it does (a setter, below), given the member of struct options at field and its argument */
    int (*set)(struct parser *p, void *member, const char *arg);
    size_t field; /* the offset of the member a generic setter sets (0 for the others) */
    /* --help's text (a heading's title); a '\n' continues it on a line of its own in the column */
    const char *help;
    const char *const *list; /* names --help appends to the text, comma-separated and wrapped */
};

/* A setter's result besides 0 (go on) and a usage error's exit status: the command line is done
 * (--help, --version, --mark). */
enum { PARSE_DONE = -1 };

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_msg("%s (try '%s --help')", msg, log_program());
    return EXIT_CANCELED;
}

static int duration_arg(const char *arg, uint64_t *ret)
{
    if (parse_duration(arg, ret) < 0)
        return usage_error("invalid time interval '%s'", arg);
    return 0;
}

/* A decimal count within [min, max] (no sign, no exponent, nothing after it). */
static bool count_arg(const char *arg, uint64_t min, uint64_t max, uint64_t *ret)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (!isdigit((unsigned char)*arg) || *end || errno || v < min || v > max)
        return false;
    *ret = v;
    return true;
}

/* The index of arg among words[0..n), or -1. */
static int word_arg(const char *arg, const char *const *words, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(arg, words[i]) == 0)
            return i;
    return -1;
}

/* Meta keys whose value the profile's format fixes, or whose type is not a string: a --meta value
 * (always a string) there would make the profile fail to load (the front-end's ProfileMeta). */
static bool meta_key_reserved(const char *key, size_t len)
{
    static const char *const owned[] = {
        "type", "processType", "stackwalk", "version", "preprocessedProfileVersion",
        "symbolicationNotSupported", "symbolicated", "interval", "startTime", "endTime", "profilingStartTime",
        "profilingEndTime", "startTimeAsClockMonotonicNanosecondsSinceBoot",
        "startTimeAsMachAbsoluteTimeNanoseconds", "startTimeAsQueryPerformanceCounterValue", "logicalCPUs",
        "physicalCPUs", "mainMemory", "categories", "markerSchema", "usesOnlyOneStackType", "extensions",
        "debug", "visualMetrics", "configuration", "sampleUnits", "fileSize", "sourceCodeIsNotOnSearchfox",
        "extra", "initialVisibleThreads", "initialSelectedThreads", "keepProfileThreadOrder", "maxMarkers",
        "containment", "resmonVersion",
    };
    for (size_t i = 0; i < ARRAY_SIZE(owned); i++)
        if (strlen(owned[i]) == len && memcmp(owned[i], key, len) == 0)
            return true;
    return false;
}

/* ---- the setters: what each option does to the options ------------------------------------- */

/* The generic ones set the member of struct options the table names (its field); the others know
 * theirs. Each returns 0, PARSE_DONE or a usage error's exit status. */

static int set_true(struct parser *p, void *member, const char *arg)
{
    *(bool *)member = true;
    return 0;
}

static int set_false(struct parser *p, void *member, const char *arg)
{
    *(bool *)member = false;
    return 0;
}

static int set_duration(struct parser *p, void *member, const char *arg)
{
    return duration_arg(arg, member);
}

static int set_signal(struct parser *p, void *member, const char *arg)
{
    if (parse_signal(arg, &p->o->signal) < 0)
        return usage_error("%s: invalid signal", arg);
    return 0;
}

static int set_containment(struct parser *p, void *member, const char *arg)
{
    static const char *const modes[] = {
        [CONTAIN_AUTO] = "auto", [CONTAIN_MODE_CGROUP] = "cgroup", [CONTAIN_MODE_SUBREAPER] = "subreaper"};
    int m = word_arg(arg, modes, ARRAY_SIZE(modes));
    if (m < 0)
        return usage_error("invalid --containment value '%s' (auto, cgroup or subreaper)", arg);
    p->o->containment = (enum contain_mode)m;
    return 0;
}

static int set_memory_limit(struct parser *p, void *member, const char *arg)
{
    if (parse_size(arg, &p->o->memory_limit) < 0)
        return usage_error("invalid --memory-limit '%s' (a size: bytes, or with K, M, G or T)", arg);
    return 0;
}

static int set_tasks_limit(struct parser *p, void *member, const char *arg)
{
    if (!count_arg(arg, 1, UINT64_C(1) << 31, &p->o->tasks_limit))
        return usage_error("invalid --tasks-limit '%s' (a count of processes and threads, at least 1)", arg);
    return 0;
}

static int set_output(struct parser *p, void *member, const char *arg)
{
    p->o->output = arg;
    p->o->no_profile = false;
    return *arg ? 0 : usage_error("empty profile path");
}

static int set_no_profile(struct parser *p, void *member, const char *arg)
{
    p->o->no_profile = true;
    p->o->output = NULL;
    return 0;
}

static int set_interval(struct parser *p, void *member, const char *arg)
{
    int r = duration_arg(arg, &p->o->interval_ns);
    if (!r && p->o->interval_ns && p->o->interval_ns < CLI_MIN_INTERVAL_NS)
        r = usage_error("sampling interval '%s' is too short (at least %llu ms, or 0 for none)", arg,
                        (unsigned long long)(CLI_MIN_INTERVAL_NS / 1000000));
    return r;
}

static int set_cpu_profile(struct parser *p, void *member, const char *arg)
{
    uint64_t v = CPUPROF_DEFAULT_HZ;
    if (arg && !count_arg(arg, 1, CPUPROF_MAX_HZ, &v))
        return usage_error("invalid --cpu-profile rate '%s' (Hz, 1 to %d)", arg, CPUPROF_MAX_HZ);
    p->o->cpu_profile_hz = (unsigned)v;
    return 0;
}

static int set_no_cpu_profile(struct parser *p, void *member, const char *arg)
{
    p->o->cpu_profile_hz = 0;
    return 0;
}

static int set_parse(struct parser *p, void *member, const char *arg)
{
    if (testlog_parse_formats(arg, &p->o->parse_formats) < 0)
        return usage_error("invalid --parse value '%s'", arg);
    return 0;
}

static int set_product(struct parser *p, void *member, const char *arg)
{
    p->o->product = arg;
    return *arg ? 0 : usage_error("empty product name");
}

static int set_meta(struct parser *p, void *member, const char *arg)
{
    struct options *o = p->o;
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return usage_error("invalid --meta '%s' (expected KEY=VALUE)", arg);
    if (meta_key_reserved(arg, (size_t)(eq - arg)))
        return usage_error("--meta '%.*s': the profile's format owns this key (not a string there)",
                           (int)(eq - arg), arg);
    struct meta_kv *m = realloc(o->meta, (o->n_meta + 1) * sizeof *m);
    if (m)
        o->meta = m;
    char *key = strndup(arg, (size_t)(eq - arg));
    if (!m || !key) {
        free(key);
        return usage_error("out of memory");
    }
    m[o->n_meta].key = key;
    m[o->n_meta].value = eq + 1;
    o->n_meta++;
    return 0;
}

static int set_max_markers(struct parser *p, void *member, const char *arg)
{
    if (!count_arg(arg, 0, PROFILE_MAX_MARKERS_MAX, &p->o->max_markers))
        return usage_error("invalid --max-markers value '%s' (a count, 0 for no limit)", arg);
    return 0;
}

static int set_recover(struct parser *p, void *member, const char *arg)
{
    p->o->action = CLI_RECOVER;
    p->o->recover = arg;
    return 0;
}

static int set_junit(struct parser *p, void *member, const char *arg)
{
    p->o->junit = arg;
    return *arg ? 0 : usage_error("empty JUnit report path");
}

static int set_otlp(struct parser *p, void *member, const char *arg)
{
    p->o->otlp = arg;
    return *arg ? 0 : usage_error("empty OpenTelemetry file path");
}

static int set_ci(struct parser *p, void *member, const char *arg)
{
    static const char *const modes[] = {[CI_AUTO] = "auto", [CI_NONE] = "none", [CI_GITHUB] = "github"};
    int m = word_arg(arg, modes, ARRAY_SIZE(modes));
    if (m < 0)
        return usage_error("--ci=%s: expected auto, none or github", arg);
    p->o->ci = (enum ci_mode)m;
    return 0;
}

/* Everything after --mark belongs to it. */
static int set_mark(struct parser *p, void *member, const char *arg)
{
    p->o->action = CLI_MARK;
    p->o->argv = p->argv + optind;
    p->o->argc = p->argc - optind;
    return PARSE_DONE;
}

static int set_dump_budget(struct parser *p, void *member, const char *arg)
{
    p->o->dump_budget_set = true;
    p->asked_dump = true;
    return duration_arg(arg, &p->o->dump_budget_ns);
}

static int set_dump_file(struct parser *p, void *member, const char *arg)
{
    p->o->dump_file = arg;
    p->asked_dump = true;
    return *arg ? 0 : usage_error("empty --dump-file path");
}

static int set_dump(struct parser *p, void *member, const char *arg)
{
    p->asked_dump = true;
    if (forensics_parse_runtimes(arg, &p->o->dump_runtimes) < 0)
        return usage_error("invalid --dump list '%s' (go, java, python)", arg);
    return 0;
}

static int set_no_dump(struct parser *p, void *member, const char *arg)
{
    p->o->dump = false;
    p->no_dump = true;
    return 0;
}

static int set_compare(struct parser *p, void *member, const char *arg)
{
    p->o->action = CLI_COMPARE;
    return 0;
}

static int set_threshold(struct parser *p, void *member, const char *arg)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || (*end && strcmp(end, "%") != 0) || errno || !(v > 0) || v > 1e6)
        return usage_error("invalid --threshold '%s' (a percentage above 0)", arg);
    p->o->threshold_pct = v;
    return 0;
}

static int set_deny_network(struct parser *p, void *member, const char *arg)
{
    p->o->deny_network = true;
    p->o->deny |= SANDBOX_DENY_NETWORK;
    return 0;
}

static int set_deny(struct parser *p, void *member, const char *arg)
{
    int r = 0;
    if (sandbox_parse_deny(arg, &p->o->deny) < 0)
        r = usage_error("invalid --deny class list '%s' (network, ptrace, namespaces, all)", arg);
    if (p->o->deny & SANDBOX_DENY_NETWORK)
        p->o->deny_network = true;
    return r;
}

static int set_help(struct parser *p, void *member, const char *arg)
{
    cli_print_help(p->o->timeout_mode);
    p->o->action = CLI_EXIT;
    return PARSE_DONE;
}

static int set_version(struct parser *p, void *member, const char *arg)
{
    printf("%s (%s) %s\n", log_program(), PACKAGE_NAME, PACKAGE_VERSION);
    if (sandbox_test_hooks())
        printf("built with test hooks: not for production use\n");
    p->o->action = CLI_EXIT;
    return PARSE_DONE;
}

/* ---- the table ------------------------------------------------------------------------------ */

/* A member of struct options, for the generic setters; the compiler refuses one not of type T. */
#define FIELD(member, T) \
    (offsetof(struct options, member) + 0 * sizeof((T *)0 == &((struct options *)0)->member))
#define ON(member) set_true, FIELD(member, bool)
#define OFF(member) set_false, FIELD(member, bool)
#define DURATION(member) set_duration, FIELD(member, uint64_t)
#define HEADING(title) {.help = (title)}

/* --parse's names: the registry's formats, in their order. */
static const char *const format_names[] = {
#define TL_FORMAT(var, NAME, alias) #var,
#include "testlog/registry.h"
#undef TL_FORMAT
    NULL,
};

static const struct cli_option option_table[] = {
    HEADING("Timeouts and signals"),
    {"timeout", 't', "=DURATION", DURATION(timeout_ns), "time out COMMAND after DURATION"},
    {"output-timeout", 0, "=DURATION", DURATION(output_timeout_ns),
     "time out when COMMAND prints nothing for DURATION"},
    {"signal", 's', "=SIG", set_signal, 0, "signal sent on timeout (default TERM); a name or number"},
    {"kill-after", 'k', "=DURATION", DURATION(kill_after_ns),
     "send KILL if COMMAND still runs DURATION after the signal"},
    {"preserve-status", 'p', NULL, ON(preserve_status), "exit with COMMAND's status even after a timeout"},
    {"foreground", 'f', NULL, ON(foreground),
     "signal only COMMAND, not its children; COMMAND keeps the\n"
     "terminal's process group"},
    {"kill-leftovers", 0, NULL, ON(kill_leftovers),
     "stop processes COMMAND leaves behind (default unless\n"
     "invoked as *timeout)"},
    {"no-kill-leftovers", 0, NULL, OFF(kill_leftovers), "leave them running"},
    {"grace", 0, "=DURATION", DURATION(grace_ns), "time leftovers get between TERM and KILL (default 2s)"},
    {"containment", 0, "=MODE", set_containment, 0, "auto, cgroup or subreaper (default auto)"},
    {"memory-limit", 0, "=SIZE", set_memory_limit, 0,
     "stop the run when the tree's memory passes SIZE (K, M, G)"},
    {"cpu-limit", 0, "=DURATION", DURATION(cpu_limit_ns),
     "stop the run when the tree has used DURATION of CPU time"},
    {"tasks-limit", 0, "=N", set_tasks_limit, 0, "at most N processes and threads in the tree"},

    HEADING("Profile"),
    {"output", 'o', "=FILE", set_output, 0,
     "the profile (default $MOZ_UPLOAD_DIR/profile_resource-usage.json,\n"
     "else resmon-profile.json; none when invoked as *timeout)"},
    {"no-profile", 0, NULL, set_no_profile, 0, "write no profile (--junit and --otlp still written)"},
    {"gzip", 0, NULL, ON(gzip),
     "compress the final profile with gzip (the stream stays\n"
     "plain); implied by an output FILE ending in .gz"},
    {"interval", 'i', "=DURATION", set_interval, 0, "sampling interval (default 1s; 0 turns sampling off)"},
    {"pss", 0, NULL, ON(pss), "also sample proportional set size (costlier)"},
    {"cpu-profile", 0, "[=HZ]", set_cpu_profile, 0,
     "sample the on-CPU stacks of the whole tree at HZ (default\n99) with perf_event_open, for the Call Tree"},
    {"no-cpu-profile", 0, NULL, set_no_cpu_profile, 0, "no sampled stacks (the default)"},
    {"no-event-filter", 0, NULL, ON(no_event_filter),
     "hear every process event of the machine, not only the tree's\n"
     "(costlier on a busy machine; see the manual)"},
    {"parse", 0, "=FORMATS", set_parse, 0, "auto (default), none, or a comma list of:", format_names},
    {"log-info", 0, NULL, ON(log_info), "also record INFO and DEBUG log lines as markers"},
    {"process-output", 0, NULL, ON(process_output), "also record mozlog process_output lines as markers"},
    {"product", 0, "=NAME", set_product, 0, "product name in the profile (default: COMMAND's name)"},
    {"meta", 0, "=KEY=VALUE", set_meta, 0, "add a metadata field to the profile (repeatable)"},
    {"fsync-interval", 0, "=DURATION", DURATION(fsync_interval_ns),
     "flush the stream to disk this often, and the profile of a\n"
     "run that lasted longer (default 1s; 0: at the end only)"},
    {"max-markers", 0, "=N", set_max_markers, 0,
     "past N markers the profile leaves out expected passes, past\n"
     "2N all but the run's end (default 2000000; 0 no limit)"},
    {"recover", 0, "=STREAM", set_recover, 0, "turn a stream left by a killed run into a profile (-o: where)"},
    {"junit", 0, "=FILE", set_junit, 0,
     "also write the tests as a JUnit XML report (with --recover:\n"
     "rebuilt from the stream)"},
    {"otlp", 0, "=FILE", set_otlp, 0,
     "also write the run as OpenTelemetry data (OTLP/JSON lines: a\n"
     "span per test, samples as metrics); --recover rebuilds it"},
    {"ci", 0, "=auto|none|github", set_ci, 0,
     "GitHub Actions: the summary to $GITHUB_STEP_SUMMARY and\n"
     "::error annotations (auto: when GITHUB_ACTIONS=true);\n"
     "at a stop too, before any signal"},
    {"mark", 0, " KIND NAME [TEXT]", set_mark, 0,
     "from inside COMMAND: record a marker in the profile:\n"
     "event NAME [TEXT]  an instant marker\n"
     "begin NAME [TEXT]  an interval marker, until\n"
     "end NAME           closes the latest open NAME\n"
     "phase-begin NAME, phase-end NAME  a phase, with the\n"
     "tree's CPU time during it; a no-op under --no-profile"},

    HEADING("At a stop (timeout, limit, stop request), before any signal"),
    {"dump-budget", 0, "=DURATION", set_dump_budget, 0,
     "time for recording what every process of the tree was\n"
     "doing: state, system call, every thread's stack (default\n"
     "2s on a timeout or limit, 0.5s on a stop request; 0: no\n"
     "stacks); off unless given when invoked as *timeout"},
    {"dump-file", 0, "=FILE", set_dump_file, 0,
     "the dump as text (default: the profile's path with\n"
     ".stacks.txt appended)"},
    {"dump", 0, "=RUNTIMES", set_dump, 0,
     "also ask these runtimes for their own dump, a comma list\n"
     "of: go (SIGQUIT), java (SIGQUIT), python (SIGABRT, with\n"
     "PYTHONFAULTHANDLER set for COMMAND); none by default"},
    {"no-dump", 0, NULL, set_no_dump, 0, "record nothing"},
    {"compare", 0, " OLD NEW", set_compare, 0,
     "compare two runs (profiles or streams): new failures, fixed,\n"
     "slower, fatter, new and gone tests, totals (exit 1 on\n"
     "regressions)"},
    {"threshold", 0, "=PERCENT", set_threshold, 0, "with --compare: slower or fatter past this (default 20)"},
    {"markdown", 0, NULL, ON(markdown), "with --compare: the comparison as Markdown"},

    HEADING("Other"),
    {"verbose", 'v', NULL, ON(verbose), "diagnose signals sent and the containment used"},
    {"quiet", 'q', NULL, ON(quiet), "no summary at the end"},
    {"no-sandbox", 0, NULL, ON(no_sandbox), "do not lock resmon-run down with seccomp"},
    {"deny-network", 0, NULL, set_deny_network, 0, "COMMAND may not open sockets other than AF_UNIX"},
    {"deny", 0, "=CLASSES", set_deny, 0,
     "seccomp filters for COMMAND, a comma list of: network,\n"
     "ptrace, namespaces, all (see the manual for what breaks)"},
    {"help", 0, NULL, set_help, 0, "display this help and exit"},
    {"version", 0, NULL, set_version, 0, "output version information and exit"},
};

/* ---- --help --------------------------------------------------------------------------------- */

/* The column an option's text starts in, and the width its appended list is wrapped to. */
enum { HELP_COLUMN = 29, HELP_WIDTH = 88 };

static void print_option_help(const struct cli_option *opt)
{
    int n = opt->letter ? printf("  -%c, --%s", opt->letter, opt->name) : printf("      --%s", opt->name);
    n += printf("%s", opt->arg ? opt->arg : "");
    /* at least two spaces between the option and its text */
    printf("%*s", n + 2 > HELP_COLUMN ? 2 : HELP_COLUMN - n, "");
    n = HELP_COLUMN;
    for (const char *s = opt->help; *s; s++) {
        if (*s == '\n')
            n = printf("\n%*s", HELP_COLUMN, "") - 1;
        else
            n += putchar(*s) != EOF;
    }
    for (const char *const *w = opt->list; w && *w; w++) {
        size_t len = strlen(*w) + (w[1] ? 1 : 0); /* the name and its comma */
        if (n + 1 + (int)len > HELP_WIDTH)
            n = printf("\n%*s", HELP_COLUMN, "") - 1;
        else
            n += printf(" ");
        n += printf("%s%s", *w, w[1] ? "," : "");
    }
    putchar('\n');
}

void cli_print_help(bool timeout_mode)
{
    const char *p = log_program();
    if (timeout_mode)
        printf("Usage: %s [OPTION]... DURATION COMMAND [ARG]...\n"
               "Start COMMAND, and kill it if still running after DURATION.\n\n",
               p);
    else
        printf("Usage: %s [OPTION]... [--] COMMAND [ARG]...\n"
               "Run COMMAND, pass its output through, record the resources of the machine and of\n"
               "COMMAND's process tree and the tests it runs into a Firefox Profiler profile,\n"
               "and enforce timeouts.\n\n",
               p);
    for (size_t i = 0; i < ARRAY_SIZE(option_table); i++) {
        if (option_table[i].name)
            print_option_help(&option_table[i]);
        else
            printf("%s%s:\n", i ? "\n" : "", option_table[i].help);
    }
    fputs("\nDURATION is a floating point number with an optional suffix: 's' for seconds (the\n"
          "default), 'm' for minutes, 'h' for hours or 'd' for days. 0 disables the timeout.\n"
          "\nExit status: 124 if COMMAND timed out and --preserve-status is not given; 125 if\n"
          "resmon-run itself fails; 126 if COMMAND is found but cannot be invoked; 127 if COMMAND\n"
          "cannot be found; 137 if COMMAND (or resmon-run) is sent the KILL signal; the exit\n"
          "status of COMMAND otherwise.\n",
          stdout);
}

/* ---- the command line ----------------------------------------------------------------------- */

static void set_defaults(struct options *o, const char *argv0)
{
    memset(o, 0, sizeof *o);
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    size_t bl = strlen(base);
    o->timeout_mode = bl >= 7 && strcmp(base + bl - 7, "timeout") == 0;
    o->action = CLI_RUN;
    o->signal = SIGTERM;
    o->interval_ns = NSEC_PER_SEC;
    o->parse_formats = TL_FMT_ALL;
    o->containment = CONTAIN_AUTO;
    o->kill_leftovers = !o->timeout_mode;
    o->grace_ns = 2 * NSEC_PER_SEC;
    o->fsync_interval_ns = NSEC_PER_SEC;
    o->max_markers = PROFILE_MAX_MARKERS_DEFAULT;
    o->no_profile = o->timeout_mode;
    o->quiet = o->timeout_mode;
    /* GNU timeout's timing is resmon-timeout's contract: no dump unless asked for. */
    o->dump = !o->timeout_mode;
}

/* getopt_long's value for a long option without a letter: its index in the table, past any char. */
enum { LONG_ONLY = 256 };

/* The table's row of what getopt_long returned; NULL for ':' (an argument missing) and '?' (an
 * option unknown). */
static const struct cli_option *option_of(int c)
{
    if (c >= LONG_ONLY)
        return &option_table[c - LONG_ONLY];
    for (size_t i = 0; i < ARRAY_SIZE(option_table); i++)
        if (option_table[i].name && option_table[i].letter == c)
            return &option_table[i];
    return NULL;
}

/* The options, up to the first operand: 0, PARSE_DONE, or a usage error's exit status. */
static int read_options(struct parser *p)
{
    struct option long_options[ARRAY_SIZE(option_table) + 1];
    /* '+': stop at the first non-option (the command); ':' lets us word missing arguments. */
    char shortopts[2 + 2 * ARRAY_SIZE(option_table) + 1] = "+:";
    size_t nl = 0, ns = 2;
    for (size_t i = 0; i < ARRAY_SIZE(option_table); i++) {
        const struct cli_option *opt = &option_table[i];
        if (!opt->name)
            continue;
        int has_arg = !opt->arg                ? no_argument
                      : opt->arg[0] == '='     ? required_argument
                      : !strncmp(opt->arg, "[=", 2) ? optional_argument
                                               : no_argument;
        int val = opt->letter ? opt->letter : LONG_ONLY + (int)i;
        long_options[nl++] = (struct option){opt->name, has_arg, NULL, val};
        if (opt->letter) {
            shortopts[ns++] = opt->letter;
            if (has_arg == required_argument)
                shortopts[ns++] = ':';
        }
    }
    long_options[nl] = (struct option){0};
    shortopts[ns] = '\0';

    /* 0, not 1: getopt starts afresh, forgetting where a previous parse stopped inside "-abc" */
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(p->argc, p->argv, shortopts, long_options, NULL)) != -1) {
        const struct cli_option *opt = option_of(c);
        if (!opt && c == ':')
            return usage_error("option '%s' requires an argument", p->argv[optind - 1]);
        if (!opt && optopt && optopt < LONG_ONLY)
            return usage_error("invalid option -- '%c'", optopt);
        if (!opt)
            return usage_error("unrecognized option '%s'", p->argv[optind - 1]);
        int r = opt->set(p, (char *)p->o + opt->field, optarg);
        if (r)
            return r;
    }
    return 0;
}

/* What follows the options: the command, the runs to compare, or nothing (--recover). */
static int read_operands(struct parser *p)
{
    struct options *o = p->o;
    int argc = p->argc;
    char **argv = p->argv;
    if (p->asked_dump && !p->no_dump)
        o->dump = true;
    /* A profile named *.gz is written compressed; the stream is plain whatever its name. */
    if (profile_path_wants_gzip(o->action == CLI_RECOVER && !o->output ? o->recover : o->output))
        o->gzip = true;
    if (o->action == CLI_COMPARE) {
        if (argc - optind != 2)
            return usage_error("--compare takes two runs, OLD and NEW (profiles or streams); %d given", argc - optind);
        o->argv = argv + optind;
        o->argc = 2;
        return 0;
    }
    if (o->threshold_pct || o->markdown)
        return usage_error("%s is an option of --compare", o->markdown ? "--markdown" : "--threshold");
    if (o->action == CLI_RECOVER) {
        if (optind < argc)
            return usage_error("--recover takes no command ('%s')", argv[optind]);
        return 0;
    }
    if (o->timeout_mode) {
        if (optind >= argc)
            return usage_error("missing operand");
        if (duration_arg(argv[optind], &o->timeout_ns))
            return EXIT_CANCELED;
        optind++;
    }
    if (optind >= argc)
        return usage_error(o->timeout_mode ? "missing operand after '%s'" : "no command given%s",
                           o->timeout_mode ? argv[optind - 1] : "");
    o->argv = argv + optind;
    o->argc = argc - optind;
    if (!o->product) {
        const char *slash = strrchr(o->argv[0], '/');
        o->product = slash ? slash + 1 : o->argv[0];
    }
    return 0;
}

int cli_parse(int argc, char **argv, struct options *o)
{
    set_defaults(o, argv[0]);
    struct parser p = {.o = o, .argc = argc, .argv = argv};
    int r = read_options(&p);
    if (r == PARSE_DONE)
        return 0;
    if (r == 0)
        r = read_operands(&p);
    if (r)
        cli_release(o);
    return r;
}

void cli_release(struct options *o)
{
    for (size_t i = 0; i < o->n_meta; i++)
        free((char *)o->meta[i].key);
    free(o->meta);
    o->meta = NULL;
    o->n_meta = 0;
}

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

/* ---- options ------------------------------------------------------------------------------- */

enum {
    OPT_OUTPUT_TIMEOUT = 256,
    OPT_NO_PROFILE,
    OPT_PSS,
    OPT_CPU_PROFILE,
    OPT_NO_CPU_PROFILE,
    OPT_NO_EVENT_FILTER,
    OPT_PARSE,
    OPT_LOG_INFO,
    OPT_PROCESS_OUTPUT,
    OPT_CONTAINMENT,
    OPT_KILL_LEFTOVERS,
    OPT_NO_KILL_LEFTOVERS,
    OPT_GRACE,
    OPT_FSYNC_INTERVAL,
    OPT_MAX_MARKERS,
    OPT_PRODUCT,
    OPT_META,
    OPT_NO_SANDBOX,
    OPT_DENY_NETWORK,
    OPT_DENY,
    OPT_RECOVER,
    OPT_JUNIT,
    OPT_CI,
    OPT_OTLP,
    OPT_COMPARE,
    OPT_THRESHOLD,
    OPT_MARKDOWN,
    OPT_GZIP,
    OPT_MEMORY_LIMIT,
    OPT_CPU_LIMIT,
    OPT_TASKS_LIMIT,
    OPT_MARK,
    OPT_NO_DUMP,
    OPT_DUMP_BUDGET,
    OPT_DUMP_FILE,
    OPT_DUMP,
    OPT_HELP,
    OPT_VERSION,
};

static const struct option long_options[] = {
    {"timeout", required_argument, NULL, 't'},
    {"signal", required_argument, NULL, 's'},
    {"kill-after", required_argument, NULL, 'k'},
    {"preserve-status", no_argument, NULL, 'p'},
    {"foreground", no_argument, NULL, 'f'},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"output-timeout", required_argument, NULL, OPT_OUTPUT_TIMEOUT},
    {"output", required_argument, NULL, 'o'},
    {"no-profile", no_argument, NULL, OPT_NO_PROFILE},
    {"gzip", no_argument, NULL, OPT_GZIP},
    {"memory-limit", required_argument, NULL, OPT_MEMORY_LIMIT},
    {"cpu-limit", required_argument, NULL, OPT_CPU_LIMIT},
    {"tasks-limit", required_argument, NULL, OPT_TASKS_LIMIT},
    {"interval", required_argument, NULL, 'i'},
    {"pss", no_argument, NULL, OPT_PSS},
    {"cpu-profile", optional_argument, NULL, OPT_CPU_PROFILE},
    {"no-cpu-profile", no_argument, NULL, OPT_NO_CPU_PROFILE},
    {"no-event-filter", no_argument, NULL, OPT_NO_EVENT_FILTER},
    {"parse", required_argument, NULL, OPT_PARSE},
    {"log-info", no_argument, NULL, OPT_LOG_INFO},
    {"process-output", no_argument, NULL, OPT_PROCESS_OUTPUT},
    {"containment", required_argument, NULL, OPT_CONTAINMENT},
    {"kill-leftovers", no_argument, NULL, OPT_KILL_LEFTOVERS},
    {"no-kill-leftovers", no_argument, NULL, OPT_NO_KILL_LEFTOVERS},
    {"grace", required_argument, NULL, OPT_GRACE},
    {"fsync-interval", required_argument, NULL, OPT_FSYNC_INTERVAL},
    {"max-markers", required_argument, NULL, OPT_MAX_MARKERS},
    {"product", required_argument, NULL, OPT_PRODUCT},
    {"meta", required_argument, NULL, OPT_META},
    {"no-sandbox", no_argument, NULL, OPT_NO_SANDBOX},
    {"deny-network", no_argument, NULL, OPT_DENY_NETWORK},
    {"deny", required_argument, NULL, OPT_DENY},
    {"recover", required_argument, NULL, OPT_RECOVER},
    {"junit", required_argument, NULL, OPT_JUNIT},
    {"ci", required_argument, NULL, OPT_CI},
    {"otlp", required_argument, NULL, OPT_OTLP},
    {"compare", no_argument, NULL, OPT_COMPARE},
    {"threshold", required_argument, NULL, OPT_THRESHOLD},
    {"markdown", no_argument, NULL, OPT_MARKDOWN},
    {"mark", no_argument, NULL, OPT_MARK},
    {"no-dump", no_argument, NULL, OPT_NO_DUMP},
    {"dump-budget", required_argument, NULL, OPT_DUMP_BUDGET},
    {"dump-file", required_argument, NULL, OPT_DUMP_FILE},
    {"dump", required_argument, NULL, OPT_DUMP},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

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

static int duration_arg(const char *arg, uint64_t *ret)
{
    if (parse_duration(arg, ret) < 0)
        return usage_error("invalid time interval '%s'", arg);
    return 0;
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
    fputs("Timeouts and signals:\n"
          "  -t, --timeout=DURATION     time out COMMAND after DURATION\n"
          "      --output-timeout=DURATION  time out when COMMAND prints nothing for DURATION\n"
          "  -s, --signal=SIG           signal sent on timeout (default TERM); a name or number\n"
          "  -k, --kill-after=DURATION  send KILL if COMMAND still runs DURATION after the signal\n"
          "  -p, --preserve-status      exit with COMMAND's status even after a timeout\n"
          "  -f, --foreground           signal only COMMAND, not its children; COMMAND keeps the\n"
          "                             terminal's process group\n"
          "      --kill-leftovers       stop processes COMMAND leaves behind (default unless\n"
          "                             invoked as *timeout)\n"
          "      --no-kill-leftovers    leave them running\n"
          "      --grace=DURATION       time leftovers get between TERM and KILL (default 2s)\n"
          "      --containment=MODE     auto, cgroup or subreaper (default auto)\n"
          "      --memory-limit=SIZE    stop the run when the tree's memory passes SIZE (K, M, G)\n"
          "      --cpu-limit=DURATION   stop the run when the tree has used DURATION of CPU time\n"
          "      --tasks-limit=N        at most N processes and threads in the tree\n"
          "\nProfile:\n"
          "  -o, --output=FILE          the profile (default $MOZ_UPLOAD_DIR/profile_resource-usage.json,\n"
          "                             else resmon-profile.json; none when invoked as *timeout)\n"
          "      --no-profile           write no profile (--junit and --otlp still written)\n"
          "      --gzip                 compress the final profile with gzip (the stream stays\n"
          "                             plain); implied by an output FILE ending in .gz\n"
          "  -i, --interval=DURATION    sampling interval (default 1s; 0 turns sampling off)\n"
          "      --pss                  also sample proportional set size (costlier)\n"
          "      --cpu-profile[=HZ]     sample the on-CPU stacks of the whole tree at HZ (default\n"
          "                             99) with perf_event_open, for the Call Tree\n"
          "      --no-cpu-profile       no sampled stacks (the default)\n"
          "      --no-event-filter      hear every process event of the machine, not only the tree's\n"
          "                             (costlier on a busy machine; see the manual)\n"
          "      --parse=FORMATS        auto (default), none, or a comma list of: mozlog, tbpl,\n"
          "                             mach, vitest, jest, tap, go, gtest, pytest, unittest,\n"
          "                             libtest, check, ctest, meson, teamcity, cmocka, catch2,\n"
          "                             doctest, rspec, mocha\n"
          "      --log-info             also record INFO and DEBUG log lines as markers\n"
          "      --process-output       also record mozlog process_output lines as markers\n"
          "      --product=NAME         product name in the profile (default: COMMAND's name)\n"
          "      --meta=KEY=VALUE       add a metadata field to the profile (repeatable)\n"
          "      --fsync-interval=DURATION  flush the stream to disk this often (default 1s; 0 never)\n"
          "      --max-markers=N        past N markers the profile leaves out expected passes, past\n"
          "                             2N all but the run's end (default 2000000; 0 no limit)\n"
          "      --recover=STREAM       turn a stream left by a killed run into a profile (-o: where)\n"
          "      --junit=FILE           also write the tests as a JUnit XML report (with --recover:\n"
          "                             rebuilt from the stream)\n"
          "      --otlp=FILE            also write the run as OpenTelemetry data (OTLP/JSON lines: a\n"
          "                             span per test, samples as metrics); --recover rebuilds it\n"
          "      --ci=auto|none|github  GitHub Actions: the summary to $GITHUB_STEP_SUMMARY and\n"
          "                             ::error annotations (auto: when GITHUB_ACTIONS=true);\n"
          "                             at a stop too, before any signal\n"
          "      --mark KIND NAME [TEXT]  from inside COMMAND: record a marker in the profile:\n"
          "                             event NAME [TEXT]  an instant marker\n"
          "                             begin NAME [TEXT]  an interval marker, until\n"
          "                             end NAME           closes the latest open NAME\n"
          "                             phase-begin NAME, phase-end NAME  a phase, with the\n"
          "                             tree's CPU time during it; a no-op under --no-profile\n"
          "\nAt a stop (timeout, limit, stop request), before any signal:\n"
          "      --dump-budget=DURATION  time for recording what every process of the tree was\n"
          "                             doing: state, system call, every thread's stack (default\n"
          "                             2s on a timeout or limit, 0.5s on a stop request; 0: no\n"
          "                             stacks); off unless given when invoked as *timeout\n"
          "      --dump-file=FILE       the dump as text (default: the profile's path with\n"
          "                             .stacks.txt appended)\n"
          "      --dump=RUNTIMES        also ask these runtimes for their own dump, a comma list\n"
          "                             of: go (SIGQUIT), java (SIGQUIT), python (SIGABRT, with\n"
          "                             PYTHONFAULTHANDLER set for COMMAND); none by default\n"
          "      --no-dump              record nothing\n"
          "      --compare OLD NEW      compare two runs (profiles or streams): new failures, fixed,\n"
          "                             slower, fatter, new and gone tests, totals (exit 1 on\n"
          "                             regressions)\n"
          "      --threshold=PERCENT    with --compare: slower or fatter past this (default 20)\n"
          "      --markdown             with --compare: the comparison as Markdown\n"
          "\nOther:\n"
          "  -v, --verbose              diagnose signals sent and the containment used\n"
          "  -q, --quiet                no summary at the end\n"
          "      --no-sandbox           do not lock resmon-run down with seccomp\n"
          "      --deny-network         COMMAND may not open sockets other than AF_UNIX\n"
          "      --deny=CLASSES         seccomp filters for COMMAND, a comma list of: network,\n"
          "                             ptrace, namespaces, all (see the manual for what breaks)\n"
          "      --help                 display this help and exit\n"
          "      --version              output version information and exit\n"
          "\nDURATION is a floating point number with an optional suffix: 's' for seconds (the\n"
          "default), 'm' for minutes, 'h' for hours or 'd' for days. 0 disables the timeout.\n"
          "\nExit status: 124 if COMMAND timed out and --preserve-status is not given; 125 if\n"
          "resmon-run itself fails; 126 if COMMAND is found but cannot be invoked; 127 if COMMAND\n"
          "cannot be found; 137 if COMMAND (or resmon-run) is sent the KILL signal; the exit\n"
          "status of COMMAND otherwise.\n",
          stdout);
}

int cli_parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
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
    bool asked_dump = false, no_dump = false;

    /* '+': stop at the first non-option (the command); ':' lets us word missing arguments. */
    const char *shortopts = "+:t:s:k:pfvqo:i:";
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, long_options, NULL)) != -1) {
        int r = 0;
        switch (c) {
        case 't': r = duration_arg(optarg, &o->timeout_ns); break;
        case 's':
            if (parse_signal(optarg, &o->signal) < 0)
                r = usage_error("%s: invalid signal", optarg);
            break;
        case 'k': r = duration_arg(optarg, &o->kill_after_ns); break;
        case 'p': o->preserve_status = true; break;
        case 'f': o->foreground = true; break;
        case 'v': o->verbose = true; break;
        case 'q': o->quiet = true; break;
        case OPT_OUTPUT_TIMEOUT: r = duration_arg(optarg, &o->output_timeout_ns); break;
        case 'o':
            if (!*optarg)
                r = usage_error("empty profile path");
            o->output = optarg;
            o->no_profile = false;
            break;
        case OPT_NO_PROFILE: o->no_profile = true, o->output = NULL; break;
        case 'i':
            r = duration_arg(optarg, &o->interval_ns);
            if (!r && o->interval_ns && o->interval_ns < CLI_MIN_INTERVAL_NS)
                r = usage_error("sampling interval '%s' is too short (at least %llu ms, or 0 for none)", optarg,
                                (unsigned long long)(CLI_MIN_INTERVAL_NS / 1000000));
            break;
        case OPT_PSS: o->pss = true; break;
        case OPT_CPU_PROFILE: {
            char *end = NULL;
            errno = 0;
            unsigned long long v = optarg ? strtoull(optarg, &end, 10) : CPUPROF_DEFAULT_HZ;
            if (optarg && (!isdigit((unsigned char)*optarg) || *end || errno || !v || v > CPUPROF_MAX_HZ))
                r = usage_error("invalid --cpu-profile rate '%s' (Hz, 1 to %d)", optarg, CPUPROF_MAX_HZ);
            else
                o->cpu_profile_hz = (unsigned)v;
            break;
        }
        case OPT_NO_CPU_PROFILE: o->cpu_profile_hz = 0; break;
        case OPT_NO_EVENT_FILTER: o->no_event_filter = true; break;
        case OPT_PARSE:
            if (testlog_parse_formats(optarg, &o->parse_formats) < 0)
                r = usage_error("invalid --parse value '%s'", optarg);
            break;
        case OPT_LOG_INFO: o->log_info = true; break;
        case OPT_PROCESS_OUTPUT: o->process_output = true; break;
        case OPT_CONTAINMENT:
            if (strcmp(optarg, "auto") == 0)
                o->containment = CONTAIN_AUTO;
            else if (strcmp(optarg, "cgroup") == 0)
                o->containment = CONTAIN_MODE_CGROUP;
            else if (strcmp(optarg, "subreaper") == 0)
                o->containment = CONTAIN_MODE_SUBREAPER;
            else
                r = usage_error("invalid --containment value '%s' (auto, cgroup or subreaper)", optarg);
            break;
        case OPT_KILL_LEFTOVERS: o->kill_leftovers = true; break;
        case OPT_NO_KILL_LEFTOVERS: o->kill_leftovers = false; break;
        case OPT_GRACE: r = duration_arg(optarg, &o->grace_ns); break;
        case OPT_FSYNC_INTERVAL: r = duration_arg(optarg, &o->fsync_interval_ns); break;
        case OPT_MAX_MARKERS: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!isdigit((unsigned char)*optarg) || *end || errno || v > PROFILE_MAX_MARKERS_MAX)
                r = usage_error("invalid --max-markers value '%s' (a count, 0 for no limit)", optarg);
            else
                o->max_markers = v;
            break;
        }
        case OPT_PRODUCT:
            if (!*optarg)
                r = usage_error("empty product name");
            o->product = optarg;
            break;
        case OPT_META: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                r = usage_error("invalid --meta '%s' (expected KEY=VALUE)", optarg);
                break;
            }
            if (meta_key_reserved(optarg, (size_t)(eq - optarg))) {
                r = usage_error("--meta '%.*s': the profile's format owns this key (not a string there)",
                                (int)(eq - optarg), optarg);
                break;
            }
            struct meta_kv *m = realloc(o->meta, (o->n_meta + 1) * sizeof *m);
            char *key = strndup(optarg, (size_t)(eq - optarg));
            if (!m || !key) {
                free(key);
                if (m)
                    o->meta = m;
                r = usage_error("out of memory");
                break;
            }
            o->meta = m;
            m[o->n_meta].key = key;
            m[o->n_meta].value = eq + 1;
            o->n_meta++;
            break;
        }
        case OPT_NO_SANDBOX: o->no_sandbox = true; break;
        case OPT_NO_DUMP: o->dump = false, no_dump = true; break;
        case OPT_DUMP_BUDGET:
            r = duration_arg(optarg, &o->dump_budget_ns);
            o->dump_budget_set = true;
            asked_dump = true;
            break;
        case OPT_DUMP:
            if (forensics_parse_runtimes(optarg, &o->dump_runtimes) < 0)
                r = usage_error("invalid --dump list '%s' (go, java, python)", optarg);
            asked_dump = true;
            break;
        case OPT_DUMP_FILE:
            if (!*optarg)
                r = usage_error("empty --dump-file path");
            o->dump_file = optarg;
            asked_dump = true;
            break;
        case OPT_DENY_NETWORK:
            o->deny_network = true;
            o->deny |= SANDBOX_DENY_NETWORK;
            break;
        case OPT_DENY:
            if (sandbox_parse_deny(optarg, &o->deny) < 0)
                r = usage_error("invalid --deny class list '%s' (network, ptrace, namespaces, all)", optarg);
            if (o->deny & SANDBOX_DENY_NETWORK)
                o->deny_network = true;
            break;
        case OPT_RECOVER: o->action = CLI_RECOVER, o->recover = optarg; break;
        case OPT_CI:
            if (!strcmp(optarg, "auto"))
                o->ci = CI_AUTO;
            else if (!strcmp(optarg, "none"))
                o->ci = CI_NONE;
            else if (!strcmp(optarg, "github"))
                o->ci = CI_GITHUB;
            else
                r = usage_error("--ci=%s: expected auto, none or github", optarg);
            break;
        case OPT_COMPARE: o->action = CLI_COMPARE; break;
        case OPT_THRESHOLD: {
            char *end;
            errno = 0;
            double v = strtod(optarg, &end);
            if (end == optarg || (*end && strcmp(end, "%") != 0) || errno || !(v > 0) || v > 1e6)
                r = usage_error("invalid --threshold '%s' (a percentage above 0)", optarg);
            else
                o->threshold_pct = v;
            break;
        }
        case OPT_MARKDOWN: o->markdown = true; break;
        case OPT_OTLP:
            if (!*optarg)
                r = usage_error("empty OpenTelemetry file path");
            o->otlp = optarg;
            break;
        case OPT_JUNIT:
            if (!*optarg)
                r = usage_error("empty JUnit report path");
            o->junit = optarg;
            break;
        case OPT_GZIP: o->gzip = true; break;
        case OPT_MEMORY_LIMIT:
            if (parse_size(optarg, &o->memory_limit) < 0)
                r = usage_error("invalid --memory-limit '%s' (a size: bytes, or with K, M, G or T)", optarg);
            break;
        case OPT_CPU_LIMIT:
            r = duration_arg(optarg, &o->cpu_limit_ns);
            break;
        case OPT_TASKS_LIMIT: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!isdigit((unsigned char)*optarg) || *end || errno || v == 0 || v > (1ULL << 31))
                r = usage_error("invalid --tasks-limit '%s' (a count of processes and threads, at least 1)", optarg);
            else
                o->tasks_limit = v;
            break;
        }
        case OPT_MARK:
            /* Everything after --mark belongs to it. */
            o->action = CLI_MARK;
            o->argv = argv + optind;
            o->argc = argc - optind;
            return 0;
        case OPT_HELP:
            cli_print_help(o->timeout_mode);
            o->action = CLI_EXIT;
            return 0;
        case OPT_VERSION:
            printf("%s (%s) %s\n", log_program(), PACKAGE_NAME, PACKAGE_VERSION);
            if (sandbox_test_hooks())
                printf("built with test hooks: not for production use\n");
            o->action = CLI_EXIT;
            return 0;
        case ':':
            r = usage_error("option '%s' requires an argument", argv[optind - 1]);
            break;
        default:
            if (optopt && optopt < 256)
                r = usage_error("invalid option -- '%c'", optopt);
            else
                r = usage_error("unrecognized option '%s'", argv[optind - 1]);
        }
        if (r) {
            cli_release(o);
            return r;
        }
    }

    if (asked_dump && !no_dump)
        o->dump = true;
    /* A profile named *.gz is written compressed; the stream is plain whatever its name. */
    if (profile_path_wants_gzip(o->action == CLI_RECOVER && !o->output ? o->recover : o->output))
        o->gzip = true;
    if (o->action == CLI_COMPARE) {
        if (argc - optind != 2) {
            cli_release(o);
            return usage_error("--compare takes two runs, OLD and NEW (profiles or streams); %d given", argc - optind);
        }
        o->argv = argv + optind;
        o->argc = 2;
        return 0;
    }
    if (o->threshold_pct || o->markdown) {
        cli_release(o);
        return usage_error("%s is an option of --compare", o->markdown ? "--markdown" : "--threshold");
    }
    if (o->action == CLI_RECOVER) {
        if (optind < argc) {
            cli_release(o);
            return usage_error("--recover takes no command ('%s')", argv[optind]);
        }
        return 0;
    }
    if (o->timeout_mode) {
        if (optind >= argc) {
            cli_release(o);
            return usage_error("missing operand");
        }
        if (duration_arg(argv[optind], &o->timeout_ns)) {
            cli_release(o);
            return EXIT_CANCELED;
        }
        optind++;
    }
    if (optind >= argc) {
        cli_release(o);
        return usage_error(o->timeout_mode ? "missing operand after '%s'" : "no command given%s",
                           o->timeout_mode ? argv[optind - 1] : "");
    }
    o->argv = argv + optind;
    o->argc = argc - optind;
    if (!o->product) {
        const char *slash = strrchr(o->argv[0], '/');
        o->product = slash ? slash + 1 : o->argv[0];
    }
    return 0;
}

void cli_release(struct options *o)
{
    for (size_t i = 0; i < o->n_meta; i++)
        free((char *)o->meta[i].key);
    free(o->meta);
    o->meta = NULL;
    o->n_meta = 0;
}

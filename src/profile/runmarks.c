/* runmarks.c — see runmarks.h. */
#include "profile/runmarks.h"

#include <stdio.h>
#include <string.h>

#include "base/parse.h"
#include "base/util.h"
#include "observe/sampler.h"
#include "profile/stream.h"

enum { CMD_CMD, CMD_PID, CMD_EXIT, CMD_REASON, CMD_SIGNAL, CMD_TIER, CMD_CPU, CMD_RSS, CMD_LEFTOVERS };
static const struct marker_field command_fields[] = {
    [CMD_CMD] = MARKER_FIELD("cmd", "Command line", "string", 0),
    [CMD_PID] = MARKER_FIELD("pid", "Process ID", "pid", MF_OPTIONAL),
    [CMD_EXIT] = MARKER_FIELD("exit", "Exit", "string", 0),
    [CMD_REASON] = MARKER_FIELD("reason", "Ended by", "string", 0),
    [CMD_SIGNAL] = MARKER_FIELD("signal", "Stop signal", "string", MF_OPTIONAL),
    [CMD_TIER] = MARKER_FIELD("tier", "Containment", "string", 0),
    [CMD_CPU] = MARKER_FIELD("cpuTime", "Tree CPU time", "duration", MF_OPTIONAL),
    [CMD_RSS] = MARKER_FIELD("maxRSS", "Tree peak RSS (sampled)", "bytes", MF_OPTIONAL),
    [CMD_LEFTOVERS] = MARKER_FIELD("leftovers", "Processes left behind", "integer", MF_OPTIONAL),
};
const struct marker_type runmarks_command_type = {
    .name = "Command",
    .tooltip_label = "{marker.name}: {marker.data.cmd}",
    .table_label = "{marker.data.cmd} \xe2\x80\x94 {marker.data.exit} ({marker.data.reason})",
    .chart_label = "{marker.data.cmd}",
    /* not in the timeline's overview: it spans the whole run, a bar in the default black there */
    .display = "[\"marker-chart\",\"marker-table\"]",
    .fields = command_fields,
    .nfields = ARRAY_SIZE(command_fields),
};

enum { STOP_STOP, STOP_REASON, STOP_LIMIT, STOP_AFTER, STOP_SIGNAL, STOP_RECEIVED, STOP_OPEN, STOP_PROCS, STOP_COLOR };
static const struct marker_field timeout_fields[] = {
    /* what stopped the run, in words: "memory limit 32 MiB (33.6 MB)", "timeout" */
    [STOP_STOP] = MARKER_FIELD("stop", "Stop", "string", 0),
    [STOP_REASON] = MARKER_FIELD("reason", "Reason", "string", 0),
    [STOP_LIMIT] = MARKER_FIELD("limit", "Limit reached", "string", MF_OPTIONAL),
    /* the duration that ran out (--timeout, --output-timeout), ms: the JUnit and OTLP outputs
     * name it, from the stream alone when a killed run is recovered */
    [STOP_AFTER] = MARKER_FIELD("after", "Ran out after", "duration", MF_OPTIONAL),
    [STOP_SIGNAL] = MARKER_FIELD("signal", "Signal sent", "string", 0),
    [STOP_RECEIVED] = MARKER_FIELD("received", "Signal received", "string", MF_OPTIONAL),
    [STOP_OPEN] = MARKER_FIELD("openTests", "Open tests", "list", MF_OPTIONAL),
    [STOP_PROCS] = MARKER_FIELD("liveProcesses", "Live processes",
                                "{\"type\":\"table\",\"columns\":[{\"label\":\"PID\",\"type\":\"pid\"},"
                                "{\"label\":\"Command line\",\"type\":\"string\"}]}",
                                MF_OPTIONAL),
    [STOP_COLOR] = MARKER_FIELD("color", NULL, NULL, MF_HIDDEN),
};
const struct marker_type runmarks_timeout_type = {
    .name = "Timeout",
    .tooltip_label = "{marker.data.stop}, signal sent: {marker.data.signal}",
    .table_label = "{marker.data.stop} \xe2\x80\x94 signal sent: {marker.data.signal}",
    .chart_label = "{marker.data.stop}",
    .display = "[\"marker-chart\",\"marker-table\",\"timeline-overview\"]",
    .color_field = "color",
    .fields = timeout_fields,
    .nfields = ARRAY_SIZE(timeout_fields),
};

enum { KILL_SIGNAL, KILL_REASON, KILL_TARGETS };
static const struct marker_field kill_fields[] = {
    [KILL_SIGNAL] = MARKER_FIELD("signal", "Signal", "string", 0),
    [KILL_REASON] = MARKER_FIELD("reason", "Reason", "string", 0),
    [KILL_TARGETS] = MARKER_FIELD("targets", "Processes signalled", "integer", 0),
};
const struct marker_type runmarks_killstep_type = {
    .name = "KillStep",
    .tooltip_label = "{marker.name}: {marker.data.signal}",
    .table_label = "{marker.data.signal} ({marker.data.reason}), processes signalled: {marker.data.targets}",
    .chart_label = "{marker.data.signal}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .fields = kill_fields,
    .nfields = ARRAY_SIZE(kill_fields),
};

enum { FIN_REASON, FIN_LINES, FIN_ERRORS, FIN_WAITING, FIN_LOST };
static const struct marker_field finalize_fields[] = {
    [FIN_REASON] = MARKER_FIELD("reason", "Reason", "string", 0),
    [FIN_LINES] = MARKER_FIELD("streamLines", "Stream lines", "integer", 0),
    [FIN_ERRORS] = MARKER_FIELD("writeErrors", "Failed stream writes", "integer", 0),
    [FIN_WAITING] = MARKER_FIELD("linesWaiting", "Lines waiting to be written", "integer", 0),
    [FIN_LOST] = MARKER_FIELD("linesLost", "Lines lost", "integer", 0),
};
const struct marker_type runmarks_finalize_type = {
    .name = "Finalize",
    .tooltip_label = "{marker.name}: {marker.data.reason}",
    .table_label = "{marker.name} \xe2\x80\x94 {marker.data.reason}, {marker.data.streamLines} stream lines",
    .chart_label = "{marker.data.reason}",
    .display = "[\"marker-chart\",\"marker-table\"]",
    .fields = finalize_fields,
    .nfields = ARRAY_SIZE(finalize_fields),
};

const char *runmarks_reason_name(enum runmarks_reason r)
{
    switch (r) {
    case RUN_EXIT: return "exit";
    case RUN_SIGNAL: return "signal";
    case RUN_TIMEOUT: return "timeout";
    case RUN_OUTPUT_TIMEOUT: return "output-timeout";
    case RUN_STOPPED: return "stopped";
    case RUN_PARENT_DIED: return "parent-died";
    case RUN_EXEC_FAILED: return "exec-failed";
    case RUN_MEMORY: return "memory";
    case RUN_CPU: return "cpu";
    case RUN_TASKS: return "tasks";
    case RUN_OOM_KILL: return "oom-kill";
    }
    return "exit";
}

/* The command line, words joined by spaces. */
static void put_cmd(struct mpay *p, const struct runmarks_command *c)
{
    struct jsonw words;
    jsonw_init(&words);
    for (int i = 0; i < c->argc; i++) {
        if (i)
            jsonw_append(&words, " ", 1);
        jsonw_append(&words, c->argv[i], strlen(c->argv[i]));
    }
    if (jsonw_failed(&words))
        p->w->failed = true;
    mpay_strn(p, CMD_CMD, words.buf ? words.buf : "", words.len);
    jsonw_release(&words);
}

void runmarks_command_payload(struct jsonw *w, const struct runmarks_command *c)
{
    char text[64];
    struct mpay p;
    mpay_begin(&p, w, &runmarks_command_type);
    put_cmd(&p, c);
    if (c->pid > 0)
        mpay_int(&p, CMD_PID, c->pid);
    sampler_format_exit(c->wstatus, text, sizeof text);
    mpay_str(&p, CMD_EXIT, text);
    mpay_str(&p, CMD_REASON, runmarks_reason_name(c->reason));
    if ((c->reason == RUN_STOPPED || c->reason == RUN_PARENT_DIED) && c->stop_signal)
        mpay_str(&p, CMD_SIGNAL, signal_name(c->stop_signal, text, sizeof text));
    mpay_str(&p, CMD_TIER, c->tier);
    if (c->have_cpu)
        mpay_double(&p, CMD_CPU, (double)c->cpu_ns / 1e6, 3);
    if (c->max_rss)
        mpay_uint(&p, CMD_RSS, c->max_rss);
    if (c->reason != RUN_EXEC_FAILED)
        mpay_uint(&p, CMD_LEFTOVERS, c->leftovers);
    mpay_end(&p);
}

void runmarks_command_open_line(struct jsonw *w, const struct runmarks_command *c, double t_ms)
{
    struct jsonw data;
    jsonw_init(&data);
    struct mpay p;
    mpay_begin(&p, &data, &runmarks_command_type);
    put_cmd(&p, c);
    if (c->pid > 0)
        mpay_int(&p, CMD_PID, c->pid);
    /* what a profile written while it runs says */
    mpay_str(&p, CMD_EXIT, "still running");
    mpay_str(&p, CMD_REASON, "running");
    mpay_str(&p, CMD_TIER, c->tier);
    mpay_end(&p);
    jsonw_reset(w);
    jsonw_obj_open(w);
    jsonw_kv_str(w, "type", "open");
    jsonw_kv_str(w, "kind", "command");
    jsonw_kv_str(w, "key", "command");
    jsonw_kv_str(w, "name", "command");
    jsonw_kv_double(w, "startTime", t_ms, 3);
    jsonw_kv_int(w, "category", CAT_TASKS);
    jsonw_kv_bool(w, "cost", true);
    jsonw_key(w, "data");
    jsonw_raw(w, data.buf ? data.buf : "{}", data.buf ? data.len : 2);
    jsonw_obj_close(w);
    if (jsonw_failed(&data))
        w->failed = true;
    jsonw_release(&data);
}

void runmarks_command_close_line(struct jsonw *w)
{
    static const char line[] = "{\"type\":\"close\",\"kind\":\"command\",\"key\":\"command\"}";
    jsonw_reset(w);
    jsonw_append(w, line, sizeof line - 1);
}

const char *runmarks_stop_name(enum runmarks_reason r)
{
    switch (r) {
    case RUN_MEMORY: return "memory limit";
    case RUN_CPU: return "CPU limit";
    case RUN_TASKS: return "tasks limit";
    default: return "timeout";
    }
}

const char *runmarks_stop_reason_name(enum runmarks_reason r)
{
    return r == RUN_STOPPED ? "signal" : runmarks_reason_name(r);
}

bool runmarks_reason_parse(const char *name, bool stop_marker, enum runmarks_reason *ret)
{
    if (!name)
        return false;
    if (stop_marker && strcmp(name, "signal") == 0) {
        *ret = RUN_STOPPED;
        return true;
    }
    for (int r = RUN_EXIT; r <= RUN_OOM_KILL; r++)
        if (strcmp(name, runmarks_reason_name((enum runmarks_reason)r)) == 0) {
            *ret = (enum runmarks_reason)r;
            return true;
        }
    return false;
}

void runmarks_stop_payload(struct jsonw *w, const struct runmarks_stop *s)
{
    char name[32];
    struct mpay p;
    mpay_begin(&p, w, &runmarks_timeout_type);
    const char *reason = runmarks_stop_reason_name(s->reason);
    if (s->figure && s->figure[0]) {
        char stop[96];
        snprintf(stop, sizeof stop, "%s %s", runmarks_stop_name(s->reason), s->figure);
        mpay_str(&p, STOP_STOP, stop);
    } else {
        mpay_str(&p, STOP_STOP, reason);
    }
    mpay_str(&p, STOP_REASON, reason);
    if (s->limit)
        mpay_str(&p, STOP_LIMIT, s->limit);
    if (s->after_ns)
        mpay_double(&p, STOP_AFTER, (double)s->after_ns / 1e6, 3);
    /* a limit the kernel enforced ended the command first: no signal went out */
    mpay_str(&p, STOP_SIGNAL,
             !s->ended ? signal_name(s->signal, name, sizeof name) : "none (the command had ended)");
    if (s->reason == RUN_STOPPED && s->received)
        mpay_str(&p, STOP_RECEIVED, signal_name(s->received, name, sizeof name));
    /* none running (no test, or none open): no empty field */
    if (s->n_open) {
        mpay_key(&p, STOP_OPEN);
        jsonw_arr_open(w);
        for (size_t i = 0; i < s->n_open; i++)
            jsonw_str(w, s->open_tests[i]);
        jsonw_arr_close(w);
    }
    /* none alive (the OOM killer took the command): no empty table */
    if (s->n_procs) {
        mpay_key(&p, STOP_PROCS);
        jsonw_arr_open(w);
        for (size_t i = 0; i < s->n_procs; i++) {
            jsonw_arr_open(w);
            jsonw_int(w, s->procs[i].pid);
            jsonw_strn(w, s->procs[i].cmd, s->procs[i].cmd_len);
            jsonw_arr_close(w);
        }
        jsonw_arr_close(w);
    }
    mpay_str(&p, STOP_COLOR, "red");
    mpay_end(&p);
}

void runmarks_kill_payload(struct jsonw *w, int sig, const char *why, unsigned targets)
{
    char name[32];
    struct mpay p;
    mpay_begin(&p, w, &runmarks_killstep_type);
    mpay_str(&p, KILL_SIGNAL, signal_name(sig, name, sizeof name));
    mpay_str(&p, KILL_REASON, why);
    mpay_uint(&p, KILL_TARGETS, targets);
    mpay_end(&p);
}

void runmarks_finalize_payload(struct jsonw *w, const char *why, uint64_t stream_lines,
                               const struct stream_health *h)
{
    struct mpay p;
    mpay_begin(&p, w, &runmarks_finalize_type);
    mpay_str(&p, FIN_REASON, why);
    mpay_uint(&p, FIN_LINES, stream_lines);
    mpay_uint(&p, FIN_ERRORS, h->failed_writes);
    mpay_uint(&p, FIN_WAITING, h->lines_waiting);
    mpay_uint(&p, FIN_LOST, h->lines_lost);
    mpay_end(&p);
}

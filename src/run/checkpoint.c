/* checkpoint.c — the run's checkpoints (state.h): the stream's health said, the stream followed
 * by the converter and the reports as it grows, and a checkpoint: the finalize marker, every
 * report (sinks.h), the profile converted from the stream and renamed into place. The loop calls
 * profile_checkpoint at a stop, after a dump and at the end; nothing else of it is the loop's.
 */
#include "run/state.h"

#include <fcntl.h>

#include "base/log.h"
#include "base/outfile.h"
#include "base/util.h"
#include "observe/cpuprof.h"

/* Say at once when the stream cannot be written (disk full, a quota, the file-size limit), and
 * when it can again; the summary says what was lost. */
static void say_stream_health(struct sv *sv)
{
    if (!sv->stream)
        return;
    struct stream_health h;
    stream_health(sv->stream, &h);
    struct stream_health *was = &sv->health_said;
    if (h.error && !was->error)
        log_errno(h.error, "cannot write the profile stream '%s'; %llu line%s kept in memory and retried", sv->profile_path,
                  (unsigned long long)h.lines_waiting, h.lines_waiting == 1 ? "" : "s");
    else if (!h.error && was->error && !h.lines_waiting)
        log_msg("the profile stream '%s' is written again%s", sv->profile_path,
                h.lines_lost ? "" : ": nothing was lost");
    if (h.lines_lost > was->lines_lost)
        log_warn("%llu line%s of the profile stream '%s' lost so far (more than %u MiB could not be written)",
                 (unsigned long long)h.lines_lost, h.lines_lost == 1 ? "" : "s", sv->profile_path,
                 STREAM_BACKLOG_MAX >> 20);
    *was = h;
}

/* Let the converter read what the stream gained, so that a stop finds little left to read: every
 * FOLLOW_LINES lines (a few hundred KiB), and at each sample when anything was written. */
#define FOLLOW_LINES 1024
void follow_stream(struct sv *sv, bool any)
{
    stream_flush(sv->stream);
    say_stream_health(sv);
    if (!sv->conv)
        return;
    uint64_t lines = stream_lines(sv->stream);
    if (lines == sv->conv_lines || (!any && lines - sv->conv_lines < FOLLOW_LINES))
        return;
    sv->conv_lines = lines;
    sinks_follow(sv->sinks);
    int r = profile_conv_update(sv->conv);
    if (r < 0) {
        if (sv->o->verbose)
            log_errno(r, "following the stream; the profile will be converted from the whole stream");
        stream_set_tap(sv->stream, NULL, NULL);
        profile_conv_free(sv->conv);
        sv->conv = NULL;
    }
}

/* Tests still open at the end ran out of time (a timeout, the CPU limit), or were cut short. */
bool open_status_timeout(const struct sv *sv)
{
    return sv->cause == RUN_TIMEOUT || sv->cause == RUN_OUTPUT_TIMEOUT || sv->cause == RUN_CPU;
}

/* Write the stream and rename a complete profile over it, and the reports with it. Called BEFORE
 * any child is signalled on a stop, and again at the very end. */
void profile_checkpoint(struct sv *sv, const char *why)
{
    struct profile_end end = {0};
    if (sv->stream) {
        cpuprof_drain(sv->cpuprof);
        uint64_t now = now_ns();
        struct jsonw w;
        jsonw_init(&w);
        stream_flush(sv->stream); /* held lines count */
        struct stream_health h;
        stream_health(sv->stream, &h);
        runmarks_finalize_payload(&w, why, stream_lines(sv->stream), &h);
        emit(sv, "finalize", now, MARKER_INSTANT, CAT_TASKS, &w);
        jsonw_release(&w);
        end = (struct profile_end){stream_ms(sv->stream, now), open_status_timeout(sv) ? "TIMEOUT" : "INCOMPLETE",
                                   sv->o->gzip, &sv->profile_lock};
        /* Flushing a short run's profile to disk was an eighth of its time (`true`: 1.7 ms of
         * 14): what a crash could take is no more than one interval of work, as of the stream. */
        end.no_sync = sv->o->fsync_interval_ns && now - sv->t0 < sv->o->fsync_interval_ns;
        follow_stream(sv, true);
    }
    /* Every report (the files only with a stream); at a stop, GitHub's outputs too. */
    sinks_checkpoint(sv->sinks, end.end_ms, sv->phase == PH_DUMPING || sv->phase == PH_STOPPING);
    if (!sv->stream || sv->o->no_profile)
        return;
    struct profile_stats st;
    int r = sv->conv ? profile_conv_finalize(sv->conv, AT_FDCWD, sv->profile_path, &end, &st)
                     : profile_finalize(stream_fd(sv->stream), AT_FDCWD, sv->profile_path, &end, &st);
    if (r < 0) {
        /* The stream is what stays: make it durable. (After a rename it is no file's content any
         * more, and the profile was fsynced: no need to wait for the disk twice.) */
        stream_sync(sv->stream);
        log_msg("cannot write the profile '%s' (the stream stays in place): %s", sv->profile_path,
                outfile_why(r, AT_FDCWD, sv->profile_path));
    } else {
        if (st.left_out && !sv->finalizations)
            log_warn("%llu markers past the limit of %llu were left out of the profile (--max-markers)",
                     (unsigned long long)st.left_out, (unsigned long long)sv->o->max_markers);
        sv->finalizations++;
    }
}

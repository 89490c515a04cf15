/* otlp.h — the run as OpenTelemetry data, in the file format the OpenTelemetry Collector's
 * otlpjsonfile receiver reads: one OTLP/JSON request per line, ExportTraceServiceRequests (the
 * spans, the run's first) then ExportMetricsServiceRequests (the samples). Each line stays under
 * OTLP_LINE_BOUND bytes, below the 1 MiB the receiver reads of a line by default, however long
 * the run or large the suite: a request ends once it has grown past OTLP_LINE_SPLIT bytes, and
 * the next one carries on (a long series goes on in a metric of the same name, its cumulative
 * sums from the same start); a string value is cut at OTLP_VALUE_MAX bytes, so no span or point,
 * nor the resource each line repeats, can carry a line past the bound. Written from what results.h
 * read of the stream, at the same moments as the profile (before the first stop signal too), and
 * rebuilt by --recover.
 *
 * OTLP/JSON is proto3's JSON mapping with OTLP's rules: lowerCamelCase field names, trace and
 * span ids as lowercase hex (32 and 16 digits), 64-bit integers (times in ns since the epoch,
 * asInt) as decimal strings, enums as integers.
 *
 * Resource: service.name "resmon-run", service.version, process.command_line,
 * process.executable.name, and from the CI's meta keys (cimeta.h) cicd.pipeline.run.id,
 * cicd.pipeline.run.url.full, cicd.worker.name, vcs.repository.name, vcs.ref.head.revision,
 * resmon.ci, resmon.source_url.
 *
 * Spans (kind INTERNAL): the run, "resmon-run PRODUCT", from the command's start to the end,
 * with cicd.pipeline.result (success, failure: the command ended by itself, a crash included;
 * timeout; cancellation: a stop request or the parent's death; error: a limit, the OOM killer,
 * exec failed, or no end recorded; from results_end()),
 * process.exit.code, resmon.reason (exit, timeout, output-timeout, memory, cpu, tasks,
 * oom-kill, signal, ...), resmon.exit, resmon.limit, resmon.timeout (s), resmon.tests,
 * resmon.tests.unexpected; status ERROR unless it succeeded. One child span per test, named by
 * its id (a scoped subtest, go's "pkg/TestX/sub", is a child of its parent test's span instead):
 * test.case.name, test.suite.name (as the JUnit report's suite: go's package),
 * test.case.result.status (pass: as expected, fail: not; none for a skip), resmon.test.status,
 * resmon.test.expected, resmon.test.cpu_time (s), resmon.test.max_rss (bytes); status OK, or
 * ERROR with the message (the timeout named for a test it cut short). A test that never ended
 * ends at the run's end.
 * Ids are derived from the stream (its start time, clock and product), so every write of one
 * run, and its recovery, gives the same ids.
 *
 * Metrics: resmon.tree.cpu.time (Sum, cumulative, monotonic, s), resmon.tree.memory.rss (Gauge,
 * By), system.cpu.utilization (Gauge, 1: the machine's busy fraction), system.memory.usage (Sum,
 * cumulative, not monotonic, By, system.memory.state=used); a point per sample.
 */
#ifndef RESMON_OTLP_H
#define RESMON_OTLP_H

#define OTLP_LINE_BOUND (1024 * 1024 - 64 * 1024)
#define OTLP_LINE_SPLIT (256 * 1024)
#define OTLP_VALUE_MAX 4096

struct results;

/* The two lines to out_fd / atomically to dirfd/path. end_ms: the run's end in profile ms (< 0:
 * the last time the stream holds). 0, -EINVAL when the stream had no meta line, or -errno. */
int otlp_write(const struct results *r, int out_fd, double end_ms);
int otlp_finalize(const struct results *r, int dirfd, const char *path, double end_ms);

#endif

/* otlp.h — the run as OpenTelemetry data, in the file format the OpenTelemetry Collector's
 * otlpjsonfile receiver reads: one OTLP/JSON request per line, an ExportTraceServiceRequest
 * (the spans) then an ExportMetricsServiceRequest (the samples). Written from what results.h
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
 * with cicd.pipeline.result (success, failure, timeout, cancellation, error),
 * process.exit.code, resmon.reason (exit, timeout, output-timeout, memory, cpu, tasks,
 * oom-kill, signal, ...), resmon.exit, resmon.limit, resmon.timeout (s), resmon.tests,
 * resmon.tests.unexpected; status ERROR unless it succeeded. One child span per test, named by
 * its id: test.case.name, test.suite.name (as the JUnit report's suite), test.case.result.status
 * (pass: as expected, fail: not; none for a skip), resmon.test.status, resmon.test.expected,
 * resmon.test.cpu_time (s), resmon.test.max_rss (bytes); status OK, or ERROR with the message
 * (the timeout named for a test it cut short). A test that never ended ends at the run's end.
 * Ids are derived from the stream (its start time, clock and product), so every write of one
 * run, and its recovery, gives the same ids.
 *
 * Metrics: resmon.tree.cpu.time (Sum, cumulative, monotonic, s), resmon.tree.memory.rss (Gauge,
 * By), system.cpu.utilization (Gauge, 1: the machine's busy fraction), system.memory.usage (Sum,
 * cumulative, not monotonic, By, system.memory.state=used); a point per sample.
 */
#ifndef RESMON_OTLP_H
#define RESMON_OTLP_H

struct results;

/* The two lines to out_fd / atomically to dirfd/path. end_ms: the run's end in profile ms (< 0:
 * the last time the stream holds). 0, -EINVAL when the stream had no meta line, or -errno. */
int otlp_write(const struct results *r, int out_fd, double end_ms);
int otlp_finalize(const struct results *r, int dirfd, const char *path, double end_ms);

#endif

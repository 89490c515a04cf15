#!/usr/bin/env node
// otlp-check FILE: FILE is in the format of the OpenTelemetry Collector's otlpjsonfile receiver:
// one OTLP/JSON request per line, each an ExportTraceServiceRequest or an
// ExportMetricsServiceRequest, held to the OTLP protobuf definitions (opentelemetry-proto:
// collector/*/v1, trace/v1, metrics/v1, common/v1, resource/v1) under OTLP/JSON's mapping:
// lowerCamelCase names, ids as lowercase hex, 64-bit integers as decimal strings (or numbers),
// enums as integers. Unknown fields are errors here (the receiver would drop them silently:
// a field we misspell must not pass). Prints one JSON line of facts on success:
// {"lines":N,"spans":N,"metrics":N,"points":N,"names":[...],"attrs":{...}} where attrs maps
// "SPAN NAME" to its attributes (flat) for the tests to query; exits 1 with the reasons.
'use strict';
const fs = require('fs');

const errors = [];
function err(path, msg) {
    if (errors.length < 50) errors.push(`${path}: ${msg}`);
}

// A message: only these fields, each checked by its function.
function message(path, v, fields, required = []) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return err(path, 'not an object');
    for (const k of Object.keys(v)) {
        if (!(k in fields)) err(path, `unknown field '${k}'`);
        else fields[k](`${path}.${k}`, v[k]);
    }
    for (const k of required) if (!(k in v)) err(path, `missing '${k}'`);
}
const repeated = (f) => (path, v) => {
    if (!Array.isArray(v)) return err(path, 'not an array');
    v.forEach((x, i) => f(`${path}[${i}]`, x));
};
const string = (path, v) => { if (typeof v !== 'string') err(path, 'not a string'); };
const bool = (path, v) => { if (typeof v !== 'boolean') err(path, 'not a bool'); };
const double = (path, v) => {
    if (typeof v !== 'number' && !['NaN', 'Infinity', '-Infinity'].includes(v)) err(path, 'not a double');
};
function int64(path, v, unsigned, bits = 64) {
    let big;
    if (typeof v === 'number' && Number.isInteger(v)) big = BigInt(v);
    else if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) big = BigInt(v);
    else return err(path, `not a ${bits}-bit integer: ${JSON.stringify(v)}`);
    const max = unsigned ? (1n << BigInt(bits)) - 1n : (1n << BigInt(bits - 1)) - 1n;
    const min = unsigned ? 0n : -(1n << BigInt(bits - 1));
    if (big < min || big > max) err(path, `out of range: ${v}`);
}
const fixed64 = (path, v) => int64(path, v, true);
const sint64 = (path, v) => int64(path, v, false);
const uint32 = (path, v) => int64(path, v, true, 32);
const enumOf = (max) => (path, v) => {
    if (!Number.isInteger(v) || v < 0 || v > max) err(path, `not an enum value 0..${max}: ${JSON.stringify(v)}`);
};
const hexId = (bytes) => (path, v) => {
    if (typeof v !== 'string' || !new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(v))
        return err(path, `not ${bytes} bytes in lowercase hex: ${JSON.stringify(v)}`);
    if (/^0+$/.test(v)) err(path, 'an all-zero id is invalid');
};
const oneof = (path, v, fields) => {
    const set = Object.keys(v || {}).filter((k) => k in fields);
    if (set.length !== 1) err(path, `exactly one of ${Object.keys(fields).join(', ')} expected, got ${set.length}`);
};

// common/v1
function anyValue(path, v) {
    const f = {
        stringValue: string, boolValue: bool, intValue: sint64, doubleValue: double,
        arrayValue: (p, x) => message(p, x, { values: repeated(anyValue) }),
        kvlistValue: (p, x) => message(p, x, { values: repeated(keyValue) }),
        bytesValue: string,
    };
    message(path, v, f);
    oneof(path, v, f);
}
function keyValue(path, v) { message(path, v, { key: string, value: anyValue }, ['key', 'value']); }
const attributes = repeated(keyValue);
const scope = (path, v) => message(path, v, { name: string, version: string, attributes, droppedAttributesCount: uint32 });
const resource = (path, v) => message(path, v, { attributes, droppedAttributesCount: uint32 });

// trace/v1
let spans = [];
function span(path, v) {
    message(path, v, {
        traceId: hexId(16), spanId: hexId(8), traceState: string, parentSpanId: (p, x) => { if (x !== '') hexId(8)(p, x); },
        flags: uint32, name: string, kind: enumOf(5), startTimeUnixNano: fixed64, endTimeUnixNano: fixed64,
        attributes, droppedAttributesCount: uint32, events: repeated((p, x) => message(p, x, {
            timeUnixNano: fixed64, name: string, attributes, droppedAttributesCount: uint32 })),
        droppedEventsCount: uint32, links: repeated((p, x) => message(p, x, {
            traceId: hexId(16), spanId: hexId(8), traceState: string, attributes, droppedAttributesCount: uint32,
            flags: uint32 })),
        droppedLinksCount: uint32,
        status: (p, x) => message(p, x, { message: string, code: enumOf(2) }),
    }, ['traceId', 'spanId', 'name', 'startTimeUnixNano', 'endTimeUnixNano']);
    if (v && typeof v.name === 'string' && !v.name) err(path, 'an empty span name');
    if (v && v.startTimeUnixNano !== undefined && v.endTimeUnixNano !== undefined &&
        BigInt(v.endTimeUnixNano) < BigInt(v.startTimeUnixNano)) err(path, 'ends before it starts');
    spans.push({ path, v });
}
const scopeSpans = (path, v) => message(path, v, { scope, spans: repeated(span), schemaUrl: string });
const resourceSpans = (path, v) => message(path, v, { resource, scopeSpans: repeated(scopeSpans), schemaUrl: string });

// metrics/v1
let nmetrics = 0, npoints = 0;
const exemplar = (path, v) => message(path, v, {
    filteredAttributes: attributes, timeUnixNano: fixed64, asDouble: double, asInt: sint64, spanId: hexId(8),
    traceId: hexId(16) });
function numberPoint(path, v) {
    npoints++;
    const values = { asDouble: double, asInt: sint64 };
    message(path, v, { attributes, startTimeUnixNano: fixed64, timeUnixNano: fixed64, ...values,
        exemplars: repeated(exemplar), flags: uint32 }, ['timeUnixNano']);
    oneof(path, v, values);
}
const points = (path, v) => { if (!Array.isArray(v) || !v.length) err(path, 'no data points'); repeated(numberPoint)(path, v); };
function metric(path, v) {
    nmetrics++;
    const data = {
        gauge: (p, x) => message(p, x, { dataPoints: points }, ['dataPoints']),
        sum: (p, x) => message(p, x, { dataPoints: points, aggregationTemporality: enumOf(2), isMonotonic: bool },
            ['dataPoints', 'aggregationTemporality']),
        histogram: () => {}, exponentialHistogram: () => {}, summary: () => {},
    };
    message(path, v, { name: string, description: string, unit: string, metadata: attributes, ...data }, ['name']);
    oneof(path, v, data);
    if (v && v.sum && v.sum.aggregationTemporality === 0) err(path, 'aggregationTemporality UNSPECIFIED');
}
const scopeMetrics = (path, v) => message(path, v, { scope, metrics: repeated(metric), schemaUrl: string });
const resourceMetrics = (path, v) => message(path, v, { resource, scopeMetrics: repeated(scopeMetrics), schemaUrl: string });

const file = process.argv[2];
const lines = fs.readFileSync(file, 'utf8').split('\n');
if (lines[lines.length - 1] !== '') err(file, 'the last line has no newline');
let n = 0, sawTraces = false, sawMetrics = false;
const metricNames = [];
lines.slice(0, -1).forEach((line, i) => {
    const path = `${file}:${i + 1}`;
    let req;
    try { req = JSON.parse(line); } catch (e) { return err(path, `not JSON: ${e.message}`); }
    n++;
    if ('resourceSpans' in req) {
        sawTraces = true;
        message(path, req, { resourceSpans: repeated(resourceSpans) });
    } else if ('resourceMetrics' in req) {
        sawMetrics = true;
        message(path, req, { resourceMetrics: repeated(resourceMetrics) });
        for (const rm of req.resourceMetrics || [])
            for (const sm of rm.scopeMetrics || []) for (const m of sm.metrics || []) metricNames.push(m.name);
    } else err(path, 'neither an ExportTraceServiceRequest nor an ExportMetricsServiceRequest');
});
if (!sawTraces) err(file, 'no traces line');
if (!sawMetrics) err(file, 'no metrics line');
// One trace; ids unique; every parent is a span of it.
const ids = new Map();
for (const { path, v } of spans) {
    if (ids.has(v.spanId)) err(path, `span id ${v.spanId} used twice`);
    ids.set(v.spanId, v);
}
for (const { path, v } of spans) {
    if (v.parentSpanId && !ids.has(v.parentSpanId)) err(path, `parent ${v.parentSpanId} is no span of the file`);
    if (v.traceId !== spans[0].v.traceId) err(path, 'another trace');
}
if (errors.length) {
    for (const e of errors) console.error(`otlp-check: ${e}`);
    process.exit(1);
}
const flat = (kvs) => Object.fromEntries((kvs || []).map((kv) => [kv.key, Object.values(kv.value)[0]]));
const attrs = {};
for (const { v } of spans) attrs[v.name] = { ...flat(v.attributes), 'status.code': (v.status || {}).code || 0,
    'status.message': (v.status || {}).message || '', parent: v.parentSpanId || '',
    parentName: v.parentSpanId && ids.has(v.parentSpanId) ? ids.get(v.parentSpanId).name : '' };
const maxLine = Math.max(...lines.slice(0, -1).map((l) => Buffer.byteLength(l) + 1));
console.log(JSON.stringify({ lines: n, maxLine, spans: spans.length, metrics: nmetrics, points: npoints, names: metricNames, attrs }));

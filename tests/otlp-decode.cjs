#!/usr/bin/env node
// otlp-decode MODULES FILE: FILE (one OTLP/JSON request per line, as the OpenTelemetry
// Collector's otlpjsonfile receiver reads) decoded the way an OTLP consumer does, from the
// official protobuf definitions (opentelemetry-proto, as the OpenTelemetry JS gRPC exporter ships
// them) loaded by protobufjs from MODULES (tests/otlp/node_modules, installed by scripts/setup).
//
// Each line is read as an ExportTraceServiceRequest or ExportMetricsServiceRequest under the OTLP
// JSON mapping (proto3's, with OTLP's rules): every key must be a field of its message by its
// lowerCamelCase JSON name, of its type (64-bit integers as decimal strings or numbers, enums as
// integers, trace and span ids as lowercase hex of 16 and 8 bytes, other bytes as base64), at
// most one field of a oneof; unknown fields are errors. The message is then built with
// protobufjs, verified, encoded to the protobuf wire format and decoded back, and must come back
// the same. Prints a JSON line of facts: {"lines":N,"protobufBytes":N,"spans":N,"points":N}.
// Exits 1 with the reasons, 2 when the decoder cannot be loaded.
'use strict';
const fs = require('fs');
const path = require('path');

const [modulesArg, file] = process.argv.slice(2);
const modules = modulesArg && path.resolve(modulesArg);
if (!modules || !file) {
    console.error('usage: otlp-decode.cjs MODULES FILE');
    process.exit(2);
}
let protobuf, root;
try {
    protobuf = require(path.join(modules, 'protobufjs'));
    const protos = path.join(modules, '@opentelemetry/otlp-grpc-exporter-base/build/protos');
    root = new protobuf.Root();
    root.resolvePath = (_origin, target) => path.join(protos, target);
    root.loadSync(['opentelemetry/proto/collector/trace/v1/trace_service.proto',
                   'opentelemetry/proto/collector/metrics/v1/metrics_service.proto']);
    root.resolveAll();
} catch (e) {
    console.error(`otlp-decode: cannot load the OTLP definitions from ${modules}: ${e.message}`);
    process.exit(2);
}
const Trace = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const Metrics = root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest');

const errors = [];
const err = (where, msg) => { if (errors.length < 50) errors.push(`${where}: ${msg}`); };

const INT = {
    int32: [32, true], sint32: [32, true], sfixed32: [32, true], uint32: [32, false], fixed32: [32, false],
    int64: [64, true], sint64: [64, true], sfixed64: [64, true], uint64: [64, false], fixed64: [64, false],
};

function integer(where, v, type) {
    const [bits, signed] = INT[type];
    let big;
    if (typeof v === 'number' && Number.isSafeInteger(v)) big = BigInt(v);
    else if (typeof v === 'string' && /^-?(0|[1-9][0-9]*)$/.test(v)) big = BigInt(v);
    else return err(where, `${type} expected, got ${JSON.stringify(v)}`);
    const min = signed ? -(1n << BigInt(bits - 1)) : 0n, max = (signed ? 1n << BigInt(bits - 1) : 1n << BigInt(bits)) - 1n;
    if (big < min || big > max) return err(where, `${type} out of range: ${v}`);
    return bits === 64 ? big.toString() : Number(big);
}

// OTLP's exception to proto3's base64: trace and span ids are hex.
function bytes(where, name, v) {
    if (typeof v !== 'string') return err(where, `bytes expected, got ${JSON.stringify(v)}`);
    const id = /traceId$/i.test(name) ? 16 : /spanId$/i.test(name) ? 8 : 0;
    if (id) {
        if (!new RegExp(`^[0-9a-f]{${2 * id}}$`).test(v)) return err(where, `${id} bytes in lowercase hex expected: ${JSON.stringify(v)}`);
        return Buffer.from(v, 'hex');
    }
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4) return err(where, `base64 expected: ${JSON.stringify(v)}`);
    return Buffer.from(v, 'base64');
}

function scalar(where, field, v) {
    const t = field.type;
    if (field.resolvedType instanceof protobuf.Enum) {
        if (!Number.isInteger(v) || !Object.values(field.resolvedType.values).includes(v))
            return err(where, `a value of enum ${field.resolvedType.name} as an integer expected, got ${JSON.stringify(v)}`);
        return v;
    }
    if (field.resolvedType instanceof protobuf.Type) return message(where, field.resolvedType, v);
    if (t in INT) return integer(where, v, t);
    switch (t) {
    case 'string':
        if (typeof v !== 'string') return err(where, `string expected, got ${JSON.stringify(v)}`);
        return v;
    case 'bool':
        if (typeof v !== 'boolean') return err(where, `bool expected, got ${JSON.stringify(v)}`);
        return v;
    case 'double':
    case 'float':
        if (typeof v === 'number' || ['NaN', 'Infinity', '-Infinity'].includes(v)) return Number(v);
        return err(where, `${t} expected, got ${JSON.stringify(v)}`);
    case 'bytes': return bytes(where, field.name, v);
    default: return err(where, `field type ${t} not handled`);
    }
}

// The JSON object v as type, checked, into the plain object protobufjs builds a message from.
function message(where, type, v) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return err(where, `${type.name} object expected`);
    const byJson = new Map(type.fieldsArray.map((f) => [f.options && f.options.json_name ? f.options.json_name : f.name, f]));
    const out = {};
    for (const [k, x] of Object.entries(v)) {
        const f = byJson.get(k);
        const at = `${where}.${k}`;
        if (!f) {
            err(at, `unknown field of ${type.fullName.slice(1)}`);
            continue;
        }
        if (x === null) {
            err(at, 'null');
            continue;
        }
        if (f.repeated) {
            if (!Array.isArray(x)) {
                err(at, 'array expected');
                continue;
            }
            out[f.name] = x.map((e, i) => scalar(`${at}[${i}]`, f, e));
        } else
            out[f.name] = scalar(at, f, x);
    }
    for (const o of type.oneofsArray) {
        const set = o.fieldsArray.filter((f) => f.name in out);
        if (set.length > 1) err(where, `oneof ${o.name}: ${set.map((f) => f.name).join(' and ')} both set`);
    }
    return out;
}

function count(obj, key) {
    let n = 0;
    const walk = (o) => {
        if (Array.isArray(o)) o.forEach(walk);
        else if (o && typeof o === 'object') for (const [k, x] of Object.entries(o)) { if (k === key) n += x.length; walk(x); }
    };
    walk(obj);
    return n;
}

const facts = {lines: 0, protobufBytes: 0, spans: 0, points: 0};
const lines = fs.readFileSync(file, 'utf8').split('\n');
if (lines.pop() !== '') err(file, 'the last line has no newline');
lines.forEach((line, i) => {
    const where = `line ${i + 1}`;
    let json;
    try {
        json = JSON.parse(line);
    } catch (e) {
        return err(where, `not JSON: ${e.message}`);
    }
    const type = json && 'resourceSpans' in json ? Trace : json && 'resourceMetrics' in json ? Metrics : null;
    if (!type) return err(where, 'neither an ExportTraceServiceRequest nor an ExportMetricsServiceRequest');
    const before = errors.length;
    const plain = message(where, type, json);
    if (errors.length > before) return;
    const msg = type.fromObject(plain);
    const bad = type.verify(msg);
    if (bad) return err(where, `protobufjs: ${bad}`);
    const wire = type.encode(msg).finish();
    const back = type.decode(wire);
    const opts = {longs: String, enums: Number, bytes: String};
    if (JSON.stringify(type.toObject(back, opts)) !== JSON.stringify(type.toObject(msg, opts)))
        return err(where, 'not the same once encoded and decoded');
    facts.lines++;
    facts.protobufBytes += wire.length;
    facts.spans += count(plain, 'spans');
    facts.points += count(plain, 'dataPoints');
});
if (errors.length) {
    console.error(errors.join('\n'));
    process.exit(1);
}
console.log(JSON.stringify(facts));

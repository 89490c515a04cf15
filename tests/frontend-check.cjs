// frontend-check.cjs — loads profiles with the Firefox Profiler front-end's own import code
// (../shared/ffprof/validate-profile.cjs) and holds each result to what a user must see:
//   * it loads (ok), with no console error or warning;
//   * every marker's type has a schema, every data key is a field of it, and a field it lacks
//     is one its type declares optional (the marker types of this build: check-profile --schemas);
//   * every marker of a type with a colour field has a colour the front-end knows;
//   * every counter has samples; one that stayed at zero is hidden, the others are shown; so is
//     a marker graph's track (IO, NetIO, Tree IO: the figures its graphs draw, read from the file);
//   * no other top-level track has the name of the run's own;
//   * every thread with samples has a track;
//   * no marker shows an empty list or table field.
// Usage: node frontend-check.cjs VALIDATOR SCHEMAS.json FILE...
// Prints one line of facts per file that passes ("ok markers=N counters=A|B tracks=X|Y
// types=T:N,... threads=A|B loadMs=N hidden=X|Y colors=TYPE:c/d,... rows=CATEGORY / NAME (N)|...")
// for the shell tests to look into, and the reasons for each that does not; exits 1 when one
// did not. With FFCHECK_LABELS=T,U it also prints, for a few markers of each of those types, one
// line "label TYPE NAME: tooltip | table | chart | field=value; ..." as the front-end formats
// them.
// The validator is the program `node VALIDATOR FILE` runs; each file gets it in a worker thread of
// its own (an isolate of its own, ended when it exits, as a process would be), which costs half
// of a process of node each time (a test checks all of its profiles in one call).
'use strict';
const { Worker } = require('worker_threads');
const fs = require('fs');

const [validator, schemasFile, ...files] = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node frontend-check.cjs VALIDATOR SCHEMAS.json FILE...');
  process.exit(2);
}
const schemas = JSON.parse(fs.readFileSync(schemasFile, 'utf8'));

// The validator's output for file: what `node VALIDATOR FILE` prints.
function validate(file) {
  return new Promise((resolve, reject) => {
    const w = new Worker(validator, {
      argv: [file],
      env: { ...process.env, FFPROF_COMPACT: '1', FFPROF_SAMPLES: process.env.FFPROF_SAMPLES || '1' },
      stdout: true,
      resourceLimits: { maxOldGenerationSizeMb: 4096 },
    });
    let out = '';
    w.stdout.setEncoding('utf8');
    w.stdout.on('data', (d) => (out += d));
    w.on('error', reject);
    w.on('exit', () => resolve(out));
  });
}

(async () => {
  let failed = false;
  for (const file of files) {
    let r;
    try {
      r = JSON.parse(await validate(file));
    } catch (e) {
      console.error(`frontend-check: ${file}: the loader failed: ${e.message}`);
      failed = true;
      continue;
    }
    if (!check(file, r)) failed = true;
  }
  process.exitCode = failed ? 1 : 0;
})();

// Holds r, the validator's result for file, to the list above: prints its facts and returns true,
// or prints what is wrong and returns false.
// The profile itself (plain or gzip), or null when it cannot be read.
function readProfile(file) {
  try {
    let b = fs.readFileSync(file);
    if (b[0] === 0x1f && b[1] === 0x8b) b = require('zlib').gunzipSync(b);
    return JSON.parse(b.toString('utf8'));
  } catch (e) {
    return null;
  }
}

function check(file, r) {
  const problems = [];
  if (!r.ok) problems.push(`does not load: ${r.error}`);
  for (const m of r.consoleErrors || []) problems.push(`console error: ${m.text}`);
  for (const m of r.warnings || []) problems.push(`console ${m.level}: ${m.text}`);
  for (const s of r.schemasMissing || []) problems.push(`no schema: ${s}`);
  for (const [type, issue] of Object.entries(r.schemaFieldIssues || {})) {
    for (const key of Object.keys(issue.undescribed || {}))
      problems.push(`${type}: data.${key} is shown by no field`);
    const mine = schemas[type];
    for (const key of Object.keys(issue.missing || {})) {
      if (!mine) problems.push(`${type}: lacks ${key} (not a type of this build)`);
      else if (!mine.optional.includes(key)) problems.push(`${type}: lacks its required field ${key}`);
    }
  }
  for (const [type, colors] of Object.entries(r.colors || {}))
    for (const c of Object.keys(colors))
      if (c.startsWith('(') || c.includes('INVALID')) problems.push(`${type}: colour ${c}`);
  for (const c of r.counters || [])
    if (!c.samples) problems.push(`counter ${c.name} has no samples`);
  // A counter that stayed at zero is hidden, one that measured something is shown; no two tracks of
  // the timeline's top level share a name.
  const globals = (r.tracks && r.tracks.global) || [];
  for (const g of globals)
    for (const l of g.local || []) {
      if (l.type !== 'counter') continue;
      const c = (r.counters || [])[l.counterIndex];
      if (!c) continue;
      const zero = c.countMin === 0 && c.countMax === 0;
      const hidden = l.hidden || g.hidden;
      if (zero && !hidden) problems.push(`counter ${c.name} stayed at zero but its track is shown`);
      if (!zero && hidden) problems.push(`counter ${c.name} measured something but its track is hidden`);
    }
  // Likewise a marker graph: its figures (the keys its schema's graphs draw) in the file itself.
  const profile = readProfile(file);
  if (profile) {
    const graphKeys = {};
    for (const sc of (profile.meta && profile.meta.markerSchema) || [])
      if (sc.graphs) graphKeys[sc.name] = sc.graphs.map((g) => g.key);
    for (const g of globals)
      for (const l of g.local || []) {
        if (l.type !== 'marker' || !graphKeys[l.markerSchema]) continue;
        const th = profile.threads[l.threadIndex];
        const data = (th && th.markers && th.markers.data) || [];
        const ofType = data.filter((d) => d && d.type === l.markerSchema);
        const zero = ofType.every((d) => graphKeys[l.markerSchema].every((k) => !d[k]));
        const hidden = l.hidden || g.hidden;
        if (zero && !hidden) problems.push(`marker graph ${l.name} stayed at zero but its track is shown`);
        if (!zero && hidden) problems.push(`marker graph ${l.name} measured something but its track is hidden`);
      }
  }
  // Every thread with samples has a track: the front-end makes one thread of a pid its process's
  // track and the others local tracks, and a second main thread of the same pid gets none (its
  // stacks would be in no view).
  const tracked = new Set();
  for (const g of globals) {
    if (g.mainThreadIndex !== undefined && g.mainThreadIndex !== null) tracked.add(g.mainThreadIndex);
    for (const l of g.local || []) if (l.type === 'thread') tracked.add(l.threadIndex);
  }
  for (const t of r.threads || [])
    if (t.samples > 0 && !tracked.has(t.index))
      problems.push(`thread ${t.index} (${t.name}, pid ${t.pid} tid ${t.tid}) has samples but no track`);
  // A field the tooltip and the sidebar show empty (an empty list or table) says nothing: it is left
  // out.
  for (const [key, list] of Object.entries(r.samples || {}))
    for (const m of list)
      for (const [field, v] of Object.entries(m.fields || {}))
        if (/^\[(list|table)\] \[\]$/.test(v)) problems.push(`${key}: the field ${field} is shown empty`);
  const run = globals.find((g) => g.pid === '0');
  if (run && globals.some((g) => g !== run && g.name === run.name))
    problems.push(`the run's track and another top-level track are both named ${run.name}`);
  if (problems.length) {
    console.error(`frontend-check: ${file}:\n  ` + problems.join('\n  '));
    return false;
  }
  const tracks = [];
  for (const g of (r.tracks && r.tracks.global) || []) {
    tracks.push(g.name);
    for (const l of g.local || []) tracks.push(l.name);
  }
  const types = Object.entries(r.markerTypes || {}).map(([t, n]) => `${t}:${n}`);
  // the tracks the timeline hides, the colours of each marker type, the rows of the run's thread's
  // marker chart
  const hidden = [];
  for (const g of (r.tracks && r.tracks.global) || []) {
    if (g.hidden) hidden.push(g.name);
    for (const l of g.local || []) if (l.hidden || g.hidden) hidden.push(l.name);
  }
  const colors = Object.entries(r.colors || {}).map(([t, c]) => `${t}:${Object.keys(c).sort().join('/')}`);
  const rows = ((r.perThread || [])[0] || {}).markerChartRows || [];
  console.log(
    `ok markers=${r.markers} counters=${(r.counters || []).map((c) => c.name).join('|')} ` +
      `tracks=${tracks.join('|')} types=${types.join(',')} threads=${(r.threads || []).map((t) => t.name).join('|')} ` +
      `loadMs=${(r.parseMs || 0) + (r.viewMs || 0)} hidden=${hidden.join('|')} colors=${colors.join(',')} ` +
      `rows=${rows.join('|')}`
  );
  for (const type of (process.env.FFCHECK_LABELS || '').split(',').filter(Boolean)) {
    for (const [key, list] of Object.entries(r.samples || {})) {
      if (key.split(':')[0] !== type) continue;
      for (const m of list) {
        const fields = Object.entries(m.fields || {}).map(([k, v]) => `${k}=${v}`).join('; ');
        console.log(`label ${key}: ${m.tooltipLabel} | ${m.tableLabel} | ${m.chartLabel} | ${fields}`);
      }
    }
  }
  return true;
}

// `exitscope timeline` read by a real consumer (issue 14): DevTools' trace engine (the code of
// Chrome's Performance panel, npm @paulirish/trace_engine) parses the file; its processes, threads
// and slices must be the VMs, vCPU threads and timed exits, with exit counts per reason equal to
// `report --json`'s. The trace-event format's own rules are checked on the raw file as well, and
// the cap: a capped file holds exactly N exits and says it was cut.
//   node timeline_check.mjs --exitscope BIN --trace TRACE --out DIR [-- extra args]
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as Trace from '@paulirish/trace_engine/models/trace/trace.js';
import { parseArgs, tally } from './check_util.mjs';

const { bin, trace, outDir, extra } = parseArgs('timeline_check.mjs --exitscope BIN --trace TRACE --out DIR');
const name = path.basename(trace).replace(/\W+/g, '_') + (extra.length ? '_' + extra.join('_').replace(/\W+/g, '') : '');
const tl = tally(), check = tl.check;
function run(args) {
  const r = spawnSync(bin, args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0 && r.status !== 65) throw new Error(`${bin} ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return r;
}

const out = path.join(outDir, name + '.json');
const t = run(['timeline', '-o', out, '--max-exits', '0', ...extra, trace]);
const report = JSON.parse(run(['report', '--json', '--no-details', ...extra, trace]).stdout);
const file = JSON.parse(fs.readFileSync(out, 'utf8'));
const events = file.traceEvents;
console.log(`${name}: ${events.length} events, ${fs.statSync(out).size} bytes`);

// The format's rules (Trace Event Format: JSON Object Format).
check(Array.isArray(events) && events.length > 0, 'traceEvents is not a non-empty array');
const named = { process: new Set(), thread: new Set() };
const used = { process: new Set(), thread: new Set() };
const perThread = new Map();
const xByReason = {}, iByReason = {};
for (const e of events) {
  check(['X', 'i', 'C', 'M'].includes(e.ph), 'unexpected ph ' + e.ph);
  check(Number.isInteger(e.pid) && Number.isInteger(e.tid), 'pid/tid not integers: ' + JSON.stringify(e));
  check(typeof e.ts === 'number' && e.ts >= 0, 'bad ts: ' + JSON.stringify(e));
  if (e.ph === 'M') {
    check(typeof e.args?.name === 'string' || typeof e.args?.sort_index === 'number', 'M without a name: ' + JSON.stringify(e));
    if (e.name === 'process_name') named.process.add(e.pid);
    if (e.name === 'thread_name') named.thread.add(e.pid + '/' + e.tid);
  } else if (e.ph === 'X') {
    check(typeof e.dur === 'number' && e.dur >= 0, 'X without dur: ' + JSON.stringify(e));
    check(typeof e.args?.rip === 'string' && /^0x[0-9a-f]+$/.test(e.args.rip), 'X without its RIP: ' + JSON.stringify(e));
    xByReason[e.name] = (xByReason[e.name] || 0) + 1;
    used.process.add(e.pid); used.thread.add(e.pid + '/' + e.tid);
    const k = e.pid + '/' + e.tid;
    if (!perThread.has(k)) perThread.set(k, []);
    perThread.get(k).push([e.ts, e.dur]);
  } else if (e.ph === 'i') {
    if (e.s === 't') { iByReason[e.name] = (iByReason[e.name] || 0) + 1; used.thread.add(e.pid + '/' + e.tid); }
  } else if (e.ph === 'C') {
    check(Object.values(e.args).every((v) => typeof v === 'number' && v >= 0), 'C with a non-number: ' + JSON.stringify(e));
  }
}
for (const p of used.process) check(named.process.has(p), `process ${p} has no process_name`);
for (const k of used.thread) check(named.thread.has(k), `thread ${k} has no thread_name`);
// One vCPU thread handles one exit at a time: its slices must not overlap (a UI would nest them).
let overlaps = 0;
for (const [, list] of perThread) {
  list.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < list.length; ++i) if (list[i][0] < list[i - 1][0] + list[i - 1][1] - 1e-9) overlaps++;
}
check(overlaps === 0, `${overlaps} overlapping slices on one thread`);
const meta = file.otherData?.exitscope;
check(meta && meta.schema === 'exitscope.timeline/1' && meta.truncated === false, 'otherData.exitscope missing or truncated without a cap');

// Counts: the report's, per reason.
const all = report.groups.length === 1 ? report.groups[0] : null;
check(all !== null, 'report has not one group');
let timed = 0;
for (const r of all.reasons) {
  check((xByReason[r.reason] || 0) === r.timed_count, `${r.reason}: ${xByReason[r.reason] || 0} slices, report timed ${r.timed_count}`);
  check((xByReason[r.reason] || 0) + (iByReason[r.reason] || 0) === r.count, `${r.reason}: slices + instants != report count ${r.count}`);
  timed += r.timed_count;
}
check(Object.keys(xByReason).every((k) => all.reasons.some((r) => r.reason === k)), 'a slice reason the report does not have');

// A real consumer: DevTools' trace engine.
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(events);
const parsed = model.parsedTrace().data;
let engineSlices = 0;
const engineByReason = {};
const engineThreads = new Set();
for (const [pid, proc] of parsed.Renderer.processes) {
  for (const [tid, th] of proc.threads) {
    for (const e of th.entries) {
      if (e.ph !== 'X') continue;
      engineSlices++;
      engineByReason[e.name] = (engineByReason[e.name] || 0) + 1;
      engineThreads.add(pid + '/' + tid);
    }
  }
}
check(engineSlices === timed, `trace engine sees ${engineSlices} slices, report ${timed} timed exits`);
for (const r of all.reasons) check((engineByReason[r.reason] || 0) === r.timed_count, `trace engine ${r.reason}: ${engineByReason[r.reason] || 0}, report ${r.timed_count}`);
for (const k of engineThreads) {
  const [pid, tid] = k.split('/').map(Number);
  check(parsed.Meta.threadsInProcess.get(pid)?.get(tid)?.args?.name, `trace engine: thread ${k} has no name`);
  check(parsed.Meta.processNames.get(pid)?.args?.name, `trace engine: process ${pid} has no name`);
}
const bounds = parsed.Meta.traceBounds;
check(bounds.range > 0, 'trace engine: empty time range');

// The cap: N exits exactly, flagged in the file and on stderr.
const capped = path.join(outDir, name + '.capped.json');
const c = run(['timeline', '-o', capped, '--max-exits', '100', ...extra, trace]);
const cf = JSON.parse(fs.readFileSync(capped, 'utf8'));
const written = cf.traceEvents.filter((e) => e.ph === 'X' || (e.ph === 'i' && e.s === 't')).length;
const reported = report.totals.reported.count;
check(written === Math.min(100, reported), `capped file holds ${written} exits of ${reported}`);
if (reported > 100) {
  check(cf.otherData.exitscope.truncated === true && cf.otherData.exitscope.exits_not_written === reported - 100, 'capped file not flagged');
  check(/NOT written/.test(c.stderr), 'no message for the cap: ' + c.stderr);
  check(cf.traceEvents.some((e) => e.ph === 'i' && e.s === 'g'), 'no marker where the cap cut');
}
fs.rmSync(capped);
tl.finish();

// The HTML report in a real browser (issue 14): headless Chromium opens `exitscope report --html`
// (or `advise --html`) of a real trace; the page must load nothing from elsewhere, log no console
// error, draw every section, and show the numbers `report --json` (and `advise --json`) print.
// A screenshot is kept in the output directory.
//   node html_check.mjs --exitscope BIN --trace TRACE --out DIR [--advise] [--name NAME] [-- extra args]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { openPage } from './chromium.mjs';
import { parseArgs, tally } from './check_util.mjs';

const { argv, opt, bin, trace, outDir, extra } = parseArgs('html_check.mjs --exitscope BIN --trace TRACE --out DIR');
const advise = argv.includes('--advise');
const name = opt('--name') || path.basename(trace).replace(/\W+/g, '_') + (advise ? '_advise' : '');
const tl = tally(), check = tl.check;
function run(args) {
  try {
    return execFileSync(bin, args, { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (e.status === 65) return e.stdout;  // PARTIAL: output written all the same
    throw e;
  }
}

const html = path.join(outDir, name + '.html');
const cmd = advise ? 'advise' : 'report';
run([cmd, '--html', html, ...extra, trace]);
const report = JSON.parse(run(['report', '--json', ...(advise ? [] : extra), trace]));
const advice = advise ? JSON.parse(run(['advise', '--json', trace])) : null;
const size = fs.statSync(html).size;
console.log(`${name}: ${html} ${size} bytes`);
check(size < 8 << 20, `page is ${size} bytes, more than 8 MB`);
const page = fs.readFileSync(html, 'utf8');
check(!/<(script|link|img|iframe)[^>]+(src|href)=/i.test(page), 'page references an external script/style/image');

const browser = await openPage(html, outDir);
try {
  await browser.evaluate(`new Promise((ok, bad) => { const t0 = Date.now(); (function poll() {
    if (window.exitscopeReady) ok(true); else if (Date.now() - t0 > 30000) bad(new Error('exitscopeReady never set')); else setTimeout(poll, 50); })(); })`);
  const state = await browser.evaluate(`JSON.stringify({
    rendered: window.exitscopeRendered,
    sections: window.exitscopeData.sections.map((s) => s.id),
    samples: window.exitscopeData.duration_samples.map(([v, t]) => [v, t, ES.fmtDur(v)]),
    checks: [...document.querySelectorAll('[data-check]')].map((e) => [e.dataset.check, e.dataset.value, e.textContent]),
    flame: (() => { const s = document.querySelector('[data-check="flame|total"]'); return s ? [Number(s.dataset.exits), Number(s.dataset.time)] : null; })(),
    rate: window.exitscopeData.sections.filter((s) => s.kind === 'rate').map((s) => { const per = {};
      for (const t of s.data.threads) for (const [r, b] of Object.entries(t.reasons)) per[r] = (per[r] || 0) + b.reduce((a, c) => a + c, 0);
      return per; })[0] })`).then(JSON.parse);

  // Every section drew something.
  for (const id of state.sections) check(state.rendered[id] > 0, `section ${id} drew ${state.rendered[id]} marks`);
  // The script's durations read as the binary's (base/units.h FormatDuration).
  for (const [v, want, got] of state.samples) check(want === got, `duration ${v}: page script writes ${got}, exitscope ${want}`);

  const checks = new Map(state.checks.map(([k, v, t]) => [k, { v, t }]));
  const fmtDur = async (v) => browser.evaluate(`ES.fmtDur(${v}, ${JSON.stringify(report.context.time_unit)})`);
  // Reason tables: every number of every row equals the JSON report's, and its text the formatter's.
  let cells = 0;
  for (const g of report.groups) {
    for (const r of g.reasons) {
      for (const field of ['count', 'timed_count', 'total_ns', 'mean_ns', 'p50_ns', 'p99_ns', 'p999_ns', 'max_ns', 'blocked_ns', 'userspace_count', 'userspace_ns']) {
        const key = `${g.kind}:${g.id}|${r.reason}|${field}`;
        const c = checks.get(key);
        if (field.startsWith('userspace') && !report.totals.userspace_recorded) { check(!c, `${key} shown without kvm_userspace_exit`); continue; }
        check(c !== undefined, `${key} not on the page`);
        if (!c) continue;
        const want = r[field];
        check(want === null ? c.v === undefined : Number(c.v) === want, `${key}: page ${c.v}, report --json ${want}`);
        if (field.endsWith('_ns') && want !== null) {
          const text = await fmtDur(want);
          check(c.t === text, `${key}: page shows ${c.t}, expected ${text}`);
        }
        cells++;
      }
    }
  }
  check(cells > 0, 'no reason cells compared');
  // Latency markers: the report's p50 / p99 / p99.9 per reason (the "all" group when not grouped).
  if (report.group_by === 'reason') {
    for (const r of report.groups[0].reasons) {
      if (!r.timed_count) continue;
      for (const [m, f] of [['p50', 'p50_ns'], ['p99', 'p99_ns'], ['p99.9', 'p999_ns']]) {
        const c = checks.get(`latency|${r.reason}|${m}`);
        check(c && Number(c.v) === r[f], `latency ${r.reason} ${m}: page ${c && c.v}, report ${r[f]}`);
      }
    }
    // Flame graph: all timed exits and their handling time.
    const all = report.totals.reported;
    check(state.flame && state.flame[0] === all.timed_count, `flame graph exits ${state.flame && state.flame[0]}, report timed ${all.timed_count}`);
    check(state.flame && state.flame[1] === all.total_ns, `flame graph time ${state.flame && state.flame[1]}, report ${all.total_ns}`);
    // Exits/s bins: every exit of every reason, timed or not.
    for (const r of report.groups[0].reasons) check(state.rate[r.reason] === r.count, `rate bins ${r.reason}: ${state.rate[r.reason]}, report ${r.count}`);
  }
  // Details: each row's count.
  for (const d of report.details.slice(0, 30)) {
    const c = checks.get(`detail|${d.kind}|${d.key}|${d.name}|${d.access}`);
    if (c) check(Number(c.v) === d.count, `detail ${d.kind} ${d.key}: page ${c.v}, report ${d.count}`);
  }
  // advise's findings and their savings.
  if (advice) {
    check(advice.findings.length > 0 || state.rendered.findings > 0, 'no findings drawn');
    for (const f of advice.findings) {
      const c = checks.get('finding|' + f.id);
      check(c !== undefined, `finding ${f.id} not on the page`);
      if (c) check(f.saving_ns === null ? c.v === undefined : Number(c.v) === f.saving_ns, `finding ${f.id}: saving ${c.v}, advise --json ${f.saving_ns}`);
    }
  }
  await browser.screenshot(path.join(outDir, name + '.png'));

  // The filter: one vCPU thread narrows the charts (fewer heatmap rows, estimated percentiles).
  const filtered = await browser.evaluate(`(() => {
    const sel = document.getElementById('filter-vcpu');
    if (sel.options.length < 3) return null;   // one thread: nothing to narrow
    const before = window.exitscopeRendered.rate;
    sel.value = sel.options[1].value; sel.dispatchEvent(new Event('change'));
    const after = window.exitscopeRendered.rate;
    const approx = document.querySelector('#latency svg text') ? [...document.querySelectorAll('#latency text')].some((t) => t.textContent.includes('≈')) : true;
    sel.value = ''; sel.dispatchEvent(new Event('change'));
    return { before, after, approx, back: window.exitscopeRendered.rate };
  })()`);
  if (filtered) {
    check(filtered.after > 0 && filtered.after < filtered.before, `vCPU filter: heatmap marks ${filtered.before} -> ${filtered.after}`);
    check(filtered.approx, 'vCPU filter: latency markers not marked as estimated');
    check(filtered.back === filtered.before, 'clearing the filter did not restore the heatmap');
  }
  const flameToggle = await browser.evaluate(`(() => { document.getElementById('flame-exits').click();
    const on = document.getElementById('flame-exits').className; document.getElementById('flame-time').click(); return on; })()`);
  check(flameToggle === 'on', 'flame graph weight does not switch to exits');
  for (const p of browser.problems) check(false, p);
} finally {
  await browser.close();
}
tl.finish();

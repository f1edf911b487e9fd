// `exitscope diff --html` in a real browser (issue 14): headless Chromium opens the page of two real
// traces; it must load nothing from elsewhere, log no console error, draw its section, and show for
// every reason and detail row the counts `exitscope diff --json` prints, and its verdict.
//   node diff_check.mjs --exitscope BIN --trace BEFORE --out DIR --after AFTER [--name NAME]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { openPage } from './chromium.mjs';
import { parseArgs, tally } from './check_util.mjs';

const { opt, bin, trace: before, outDir } = parseArgs('diff_check.mjs --exitscope BIN --trace BEFORE --after AFTER --out DIR');
const after = opt('--after');
const name = opt('--name') || 'diff_' + path.basename(before).replace(/\W+/g, '_');
if (!after || !fs.existsSync(after)) { console.error('FAIL: --after trace missing: ' + after); process.exit(1); }
const tl = tally(), check = tl.check;
function run(args) {
  try {
    return execFileSync(bin, args, { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (e.status === 65 || e.status === 1) return e.stdout;  // PARTIAL or a tripped threshold: written all the same
    throw e;
  }
}

const html = path.join(outDir, name + '.html');
run(['diff', '--html', html, before, after]);
const diff = JSON.parse(run(['diff', '--json', before, after]));
const page = fs.readFileSync(html, 'utf8');
check(!/<(script|link|img|iframe)[^>]+(src|href)=/i.test(page), 'page references an external script/style/image');
const browser = await openPage(html, outDir);
try {
  await browser.evaluate(`new Promise((ok, bad) => { const t0 = Date.now(); (function poll() {
    if (window.exitscopeReady) ok(true); else if (Date.now() - t0 > 30000) bad(new Error('exitscopeReady never set')); else setTimeout(poll, 50); })(); })`);
  const state = await browser.evaluate(`JSON.stringify({ rendered: window.exitscopeRendered,
    checks: [...document.querySelectorAll('[data-check]')].map((e) => [e.dataset.check, e.dataset.value]) })`).then(JSON.parse);
  check(state.rendered.diff > 0, `diff section drew ${state.rendered.diff} marks`);
  const checks = new Map(state.checks);
  check(checks.get('diff-verdict') === diff.verdict, `verdict: page "${checks.get('diff-verdict')}", diff --json "${diff.verdict}"`);
  let rows = 0;
  for (const r of [...diff.reasons, ...diff.details].slice(0, 200)) {
    for (const s of ['before', 'after']) {
      const c = checks.get(`diff|${r.kind}|${r.key}|${r.access || ""}|${s}`);
      check(c !== undefined && Number(c) === ((r[s] || {}).count || 0), `${r.kind} ${r.key} ${s}: page ${c}, diff --json ${(r[s] || {}).count}`);
    }
    rows++;
  }
  check(rows > 0, 'no rows compared');
  for (const p of browser.problems) check(false, p);
  await browser.screenshot(path.join(outDir, name + '.png'));
} finally {
  await browser.close();
}
tl.finish();

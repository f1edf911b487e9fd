// What the browser checks share: their command line (--exitscope BIN --trace TRACE --out DIR …,
// extra exitscope arguments after --) and the pass/fail tally that sets the exit status.
import fs from 'node:fs';

export function parseArgs(usage) {
  const argv = process.argv.slice(2);
  const opt = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
  const a = { argv, opt, bin: opt('--exitscope'), trace: opt('--trace'), outDir: opt('--out'),
    extra: argv.includes('--') ? argv.slice(argv.indexOf('--') + 1) : [] };
  if (!a.bin || !a.trace || !a.outDir) { console.error('usage: ' + usage); process.exit(2); }
  if (!fs.existsSync(a.trace)) { console.error('FAIL: trace missing: ' + a.trace + ' (EXITSCOPE_SHARED_DIR?)'); process.exit(1); }
  fs.mkdirSync(a.outDir, { recursive: true });
  return a;
}

// check(ok, what) counts a pass or prints the failure; finish() prints the tally and exits 1 on any.
export function tally() {
  let failures = 0, passes = 0;
  return {
    check(ok, what) {
      if (ok) { passes++; return; }
      failures++;
      console.log('FAIL: ' + what);
    },
    finish() {
      console.log(`${passes} passed, ${failures} failed`);
      process.exit(failures ? 1 : 0);
    },
  };
}

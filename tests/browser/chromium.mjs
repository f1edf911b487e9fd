// Headless Chromium over the DevTools protocol for the browser checks: opens a local page, collects
// every console error, uncaught exception and network request that is not the page itself, and
// evaluates expressions in it. Chromium is Debian's (scripts/install-deps.sh); nothing is downloaded.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import CDP from 'chrome-remote-interface';

function findChromium() {
  for (const p of [process.env.EXITSCOPE_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser']) {
    if (p && fs.existsSync(p)) return p;
  }
  throw new Error('chromium not found: run scripts/install-deps.sh (Debian package chromium)');
}

async function waitFor(fn, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Opens `file` (a path) and returns {client, problems, evaluate, screenshot, close}.
export async function openPage(file, outDir, { width = 1400, height = 1000 } = {}) {
  const profile = fs.mkdtempSync(path.join(outDir, 'chromium-profile-'));
  const args = ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
    '--disable-extensions', '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--remote-debugging-port=0', '--user-data-dir=' + profile, `--window-size=${width},${height}`, 'about:blank'];
  const proc = spawn(findChromium(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const portFile = path.join(profile, 'DevToolsActivePort');
  let port;
  try {
    port = await waitFor(() => fs.existsSync(portFile) && Number(fs.readFileSync(portFile, 'utf8').split('\n')[0]), 30000, 'chromium to start');
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(e.message + '\n' + stderr);
  }
  const target = await waitFor(async () => (await CDP.List({ port })).find((t) => t.type === 'page'), 10000, 'a page target');
  const client = await CDP({ port, target });
  const { Page, Runtime, Log, Network, Emulation } = client;
  const problems = [];
  const url = 'file://' + path.resolve(file);
  Runtime.consoleAPICalled(({ type, args: a }) => {
    if (type === 'error' || type === 'assert') problems.push('console.' + type + ': ' + a.map((x) => x.value ?? x.description).join(' '));
  });
  Runtime.exceptionThrown(({ exceptionDetails: d }) => problems.push('exception: ' + (d.exception?.description || d.text)));
  Log.entryAdded(({ entry }) => { if (entry.level === 'error') problems.push('log error: ' + entry.text + ' ' + (entry.url || '')); });
  Network.requestWillBeSent(({ request }) => {
    if (request.url !== url && !request.url.startsWith('data:') && request.url !== 'about:blank') problems.push('network request: ' + request.url);
  });
  await Promise.all([Page.enable(), Runtime.enable(), Log.enable(), Network.enable()]);
  await Emulation.setDeviceMetricsOverride({ width, height, deviceScaleFactor: 1, mobile: false });
  const loaded = Page.loadEventFired();
  await Page.navigate({ url });
  await loaded;
  const evaluate = async (expression) => {
    const r = await Runtime.evaluate({ expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error('evaluate failed: ' + (r.exceptionDetails.exception?.description || r.exceptionDetails.text));
    return r.result.value;
  };
  const screenshot = async (png) => {
    const h = await evaluate('document.documentElement.scrollHeight');
    await Emulation.setDeviceMetricsOverride({ width, height: Math.min(Math.max(h, height), 12000), deviceScaleFactor: 1, mobile: false });
    const { data } = await Page.captureScreenshot({ format: 'png' });
    fs.writeFileSync(png, Buffer.from(data, 'base64'));
  };
  const close = async () => {
    await client.close();
    proc.kill('SIGTERM');
    await new Promise((r) => { if (proc.exitCode !== null) r(); else { proc.once('exit', r); setTimeout(r, 5000); } });
    try {
      fs.rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (e) {
      console.log('note: profile left at ' + profile + ': ' + e.message);
    }
  };
  return { client, problems, evaluate, screenshot, close };
}

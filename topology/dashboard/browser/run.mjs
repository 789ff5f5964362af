// run.mjs opens the relaymesh dashboard in headless Chromium (driven by
// playwright-core) and reports what a person would see, as JSON lines on
// stdout. It judges nothing itself: the Go test asserts on the JSON.
//
//   node topology/dashboard/browser/run.mjs --url http://127.0.0.1:8080/ --stream live/demo
//       [--relays 4] [--ip 198.51.100.10] [--play 3] [--timeout 40] [--row-relay relay-na]
//
// Phases, each reported on its own line:
//   {"phase":"relays", ...}  the relays table lists at least --relays up relays
//                            (the test starts publishing after this line);
//   {"phase":"stream", ...}  a row for --stream appeared in the live streams table
//                            (with --row-relay: one whose relays cell names it);
//   {"phase":"done", ...}    after clicking its play button (viewer address --ip),
//                            how far the video's currentTime advanced.
// On any failure the last line has "error".
import { parseArgs } from 'node:util';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    stream: { type: 'string' },
    relays: { type: 'string', default: '4' },
    ip: { type: 'string', default: '' },
    play: { type: 'string', default: '3' },
    timeout: { type: 'string', default: '40' },
    'row-relay': { type: 'string', default: '' },
    chromium: { type: 'string', default: process.env.CHROMIUM || 'chromium' },
  },
});

const line = (o) => process.stdout.write(JSON.stringify(o) + '\n');
function fail(msg, extra) {
  line({ phase: 'done', ok: false, error: msg, ...extra });
  process.exit(1);
}
if (!opt.url || !/^https?:\/\//.test(opt.url)) fail('--url http://host:port/ is required');
if (!opt.stream || !/^[^/?#% ]+\/[^/?#% ]+$/.test(opt.stream)) fail('--stream app/name is required');
const num = (name, max) => {
  const v = Number(opt[name]);
  if (!Number.isFinite(v) || v < 0 || v > max) fail(`--${name}: want a number of 0..${max}`);
  return v;
};
const wantRelays = num('relays', 1000);
const playSec = num('play', 120);
const timeoutSec = num('timeout', 600);

function findModules() {
  for (let d = here; ; d = dirname(d)) {
    const m = join(d, 'node_modules');
    if (existsSync(join(m, 'playwright-core'))) return m;
    if (dirname(d) === d) fail('node_modules with playwright-core not found: run npm ci at the repository root');
  }
}
const { chromium } = await import(join(findModules(), 'playwright-core/index.mjs'));
const profile = await mkdtemp(join(tmpdir(), 'relaymesh-dashboard-'));
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const errors = [];
let context;
let code = 1;

// poll evaluates fn in the page every 200 ms until it returns a truthy
// value or sec seconds pass; it returns the last value.
async function poll(page, sec, fn, arg) {
  const end = Date.now() + sec * 1000;
  for (;;) {
    const v = await page.evaluate(fn, arg);
    if (v || Date.now() >= end) return v;
    await sleep(200);
  }
}

try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: opt.chromium,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--autoplay-policy=no-user-gesture-required'],
    timeout: 30000,
  });
  const page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => errors.length < 20 && errors.push('pageerror: ' + e.message));
  await page.goto(opt.url, { timeout: 15000 });

  // 1. the relays table
  const relays = await poll(page, timeoutSec, (n) => {
    const rows = [...document.querySelectorAll('#relays tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent.trim()));
    const up = rows.filter((r) => r[2] === 'up');
    return up.length >= n ? rows : null;
  }, wantRelays);
  if (!relays) fail('the relays table never listed enough up relays', { errors });
  const before = await page.evaluate((s) => ({
    noStreams: !document.getElementById('nostreams').hidden,
    listed: [...document.querySelectorAll('#streams tbody tr')].some((tr) => tr.cells[0].textContent === s),
    conn: document.getElementById('conn').textContent,
  }), opt.stream);
  line({ phase: 'relays', relays: relays.map((r) => ({ id: r[0], location: r[1], status: r[2] })), ...before });

  // 2. the stream's row
  const row = await poll(page, timeoutSec, ([s, relay]) => {
    const tr = [...document.querySelectorAll('#streams tbody tr')].find((tr) => tr.cells[0].textContent === s);
    return tr && tr.cells[1].textContent.includes(relay) ? tr.cells[1].textContent : null;
  }, [opt.stream, opt['row-relay']]);
  if (!row) fail('the stream never appeared in the live streams table' + (opt['row-relay'] ? ` on ${opt['row-relay']}` : ''), { errors });
  line({ phase: 'stream', stream: opt.stream, relays: row });

  // 3. play it from its row
  await page.fill('#play-ip', opt.ip);
  await page.evaluate((s) => {
    const tr = [...document.querySelectorAll('#streams tbody tr')].find((tr) => tr.cells[0].textContent === s);
    tr.querySelector('button').click();
  }, opt.stream);
  const sample = () => page.evaluate(() => {
    const v = document.getElementById('video');
    return { t: v.currentTime, paused: v.paused, w: v.videoWidth, h: v.videoHeight };
  });
  let s = await sample();
  const startEnd = Date.now() + timeoutSec * 1000;
  while (!(s.t > 0) && Date.now() < startEnd) {
    await sleep(200);
    s = await sample();
  }
  const from = s.t;
  const playEnd = Date.now() + (playSec * 2 + 10) * 1000;
  while (s.t - from < playSec && Date.now() < playEnd) {
    await sleep(200);
    s = await sample();
  }
  const choice = await page.evaluate(() => document.getElementById('play-choice').textContent);
  line({ phase: 'done', ok: true, started: from > 0, advanced: s.t - from, width: s.w, height: s.h, choice, errors });
  code = 0;
} catch (e) {
  line({ phase: 'done', ok: false, error: String(e && e.stack ? e.stack : e), errors });
} finally {
  if (context) await context.close().catch(() => {});
  await rm(profile, { recursive: true, force: true }).catch(() => {});
}
process.exit(code);

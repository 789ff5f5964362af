// capture.mjs opens the relaymesh dashboard paused (?paused=1: the page
// draws its first snapshot and closes its event stream), waits until it
// has settled (no network activity), reads its tables, saves a screenshot
// and prints what it read as one JSON line on stdout. It judges nothing
// itself: the Go test asserts on the JSON.
//
//   node topology/dashboard/browser/capture.mjs --url http://127.0.0.1:8080/ --out dashboard.png
//       [--width 1280] [--timeout 30]
//
// The line: {"ok":true,"settled":true,"conn":"paused","streams":[[cell,…],…],
// "relays":[[cell,…],…],"cut":[…],"screenshot":"…"}; "cut" lists the cells
// of the two tables whose text does not fit the visible part of their
// section. On failure: {"ok":false,"error":"…"}.
import { parseArgs } from 'node:util';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    out: { type: 'string' },
    width: { type: 'string', default: '1280' },
    timeout: { type: 'string', default: '30' },
    chromium: { type: 'string', default: process.env.CHROMIUM || 'chromium' },
  },
});

const line = (o) => process.stdout.write(JSON.stringify(o) + '\n');
function fail(msg, extra) {
  line({ ok: false, error: msg, ...extra });
  process.exit(1);
}
if (!opt.url || !/^https?:\/\//.test(opt.url)) fail('--url http://host:port/ is required');
if (!opt.out) fail('--out FILE.png is required');
const num = (name, min, max) => {
  const v = Number(opt[name]);
  if (!Number.isFinite(v) || v < min || v > max) fail(`--${name}: want a number of ${min}..${max}`);
  return v;
};
const width = num('width', 320, 4000);
const timeoutMs = num('timeout', 1, 600) * 1000;

function findModules() {
  for (let d = here; ; d = dirname(d)) {
    const m = join(d, 'node_modules');
    if (existsSync(join(m, 'playwright-core'))) return m;
    if (dirname(d) === d) fail('node_modules with playwright-core not found: run npm ci at the repository root');
  }
}
const { chromium } = await import(join(findModules(), 'playwright-core/index.mjs'));
const profile = await mkdtemp(join(tmpdir(), 'relaymesh-capture-'));
const errors = [];
let context;
let code = 1;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: opt.chromium,
    headless: true,
    viewport: { width, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 30000,
  });
  const page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => errors.length < 20 && errors.push('pageerror: ' + e.message));
  const u = new URL(opt.url);
  u.searchParams.set('paused', '1');
  await page.goto(u.toString(), { timeout: 15000 });
  await page.waitForFunction(() => document.body.dataset.settled === 'true', null, { timeout: timeoutMs });
  // The page holds still: no open event stream, nothing loading.
  let settled = true;
  await page.waitForLoadState('networkidle', { timeout: timeoutMs }).catch(() => { settled = false; });
  const read = await page.evaluate(() => {
    const rows = (id) => [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) => [...tr.cells].map((c) => c.textContent.trim()));
    const cut = [];
    for (const id of ['relays', 'streams']) {
      const t = document.getElementById(id);
      const box = t.closest('section').getBoundingClientRect();
      for (const c of t.querySelectorAll('th, td')) {
        const r = c.getBoundingClientRect();
        if (c.textContent.trim() && (r.right > box.right + 0.5 || c.scrollWidth > c.clientWidth + 1)) {
          cut.push(`${id}: ${c.textContent.trim()}`);
        }
      }
    }
    return {
      conn: document.getElementById('conn').textContent,
      noStreams: !document.getElementById('nostreams').hidden,
      streams: rows('streams'),
      relays: rows('relays'),
      cut,
    };
  });
  const out = resolve(opt.out);
  await page.screenshot({ path: out, fullPage: true });
  line({ ok: true, settled, ...read, screenshot: out, errors });
  code = 0;
} catch (e) {
  line({ ok: false, error: String(e && e.stack ? e.stack : e), errors });
} finally {
  if (context) await context.close().catch(() => {});
  await rm(profile, { recursive: true, force: true }).catch(() => {});
}
process.exit(code);

// failover.mjs plays one HLS or DASH URL with hls.js or dash.js in headless
// Chromium (playwright-core), the page of packager/browser, asks --kill-url
// (the Go test kills the relay the player uses when it is asked) once
// currentTime advanced --play seconds, then watches for --after seconds and
// prints one JSON object: startup, the longest stall after the kill, how far
// currentTime advanced, and the servers (host:port) the page fetched media
// from before and after the kill, and how long after it the first request
// went to another server (movedAfterMs). "Kill" is whatever the test does
// at --kill-url (a SIGKILL, a drain). It judges nothing: the Go test does.
//
//   node topology/redirector/browser/failover.mjs --url URL --kill-url URL
//       [--player hls|dash] [--play 6] [--after 15] [--config '{}'] [--console page.log]
import { parseArgs } from 'node:util';
import { createServer } from 'node:http';
import { readFile, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    'kill-url': { type: 'string' },
    player: { type: 'string' },
    play: { type: 'string', default: '6' },
    after: { type: 'string', default: '15' },
    'start-timeout': { type: 'string', default: '25' },
    chromium: { type: 'string', default: process.env.CHROMIUM || '/usr/bin/chromium' },
    config: { type: 'string', default: '{}' },
    console: { type: 'string' },
  },
});
const result = { ok: false, errors: [] };
const out = () => process.stdout.write(JSON.stringify(result) + '\n');
function fail(msg) {
  result.error = msg;
  out();
  process.exit(1);
}
if (!opt.url || !opt['kill-url']) fail('--url and --kill-url are required');
const player = opt.player || (/proto=dash|\.mpd(\?|$)/.test(opt.url) ? 'dash' : 'hls');
if (player !== 'hls' && player !== 'dash') fail('--player must be hls or dash');
result.player = player;
const num = (name) => {
  const v = Number(opt[name]);
  if (!Number.isFinite(v) || v < 0 || v > 600) fail(`--${name}: want a number of 0..600`);
  return v;
};
const playSec = num('play');
const afterSec = num('after');
const startTimeout = num('start-timeout');
try {
  JSON.parse(opt.config);
} catch (e) {
  fail('--config: ' + e.message);
}

function findModules() {
  for (let d = here; ; d = dirname(d)) {
    const m = join(d, 'node_modules');
    if (existsSync(join(m, 'playwright-core'))) return m;
    if (dirname(d) === d) fail('node_modules with playwright-core not found: run npm ci at the repository root');
  }
}
const modules = findModules();
const page_ = join(dirname(modules), 'packager', 'browser');
const files = {
  '/player.html': [join(page_, 'player.html'), 'text/html'],
  '/player.js': [join(page_, 'player.js'), 'text/javascript'],
  '/hls.min.js': [join(modules, 'hls.js/dist/hls.min.js'), 'text/javascript'],
  '/dash.all.min.js': [join(modules, 'dashjs/dist/modern/umd/dash.all.min.js'), 'text/javascript'],
};
// The page has an origin of its own: the redirector's and relays' CORS
// answers are exercised.
const server = createServer(async (req, res) => {
  const f = files[new URL(req.url, 'http://x').pathname];
  if (!f || req.method !== 'GET') {
    res.writeHead(404).end();
    return;
  }
  try {
    res.writeHead(200, { 'content-type': f[1], 'cache-control': 'no-store' }).end(await readFile(f[0]));
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const pageURL = `http://127.0.0.1:${server.address().port}/player.html?player=${player}` +
  `&src=${encodeURIComponent(opt.url)}&config=${encodeURIComponent(opt.config)}`;

const { chromium } = await import(join(modules, 'playwright-core/index.mjs'));
const profile = await mkdtemp(join(tmpdir(), 'relaymesh-chromium-'));
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: opt.chromium,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--autoplay-policy=no-user-gesture-required'],
    timeout: 30000,
  });
  result.browser = context.browser() ? context.browser().version() : '';
  const page = context.pages()[0] || await context.newPage();
  page.on('pageerror', (e) => result.errors.length < 20 && result.errors.push('pageerror: ' + e.message));
  const consoleLines = [];
  const pageStart = Date.now();
  if (opt.console) {
    page.on('console', (m) => consoleLines.length < 200000 && consoleLines.push(`${Date.now() - pageStart} ${m.type()}: ${m.text()}`));
  }
  // Media requests by server, before and after the kill.
  let killed = false;
  let killedAt = 0;
  let firstHost = '';
  const media = { before: {}, after: {} };
  const steering = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/steer/')) {
      if (steering.length < 100) steering.push(`${Date.now() - pageStart} ${u.pathname}${u.search}`);
      return;
    }
    if (!/^\/(hls|dash)\//.test(u.pathname)) return;
    const m = killed ? media.after : media.before;
    m[u.host] = (m[u.host] || 0) + 1;
    if (!firstHost) firstHost = u.host;
    // ms from the kill to the first media request to another server
    if (killed && u.host !== firstHost && result.movedAfterMs === undefined) result.movedAfterMs = Date.now() - killedAt;
  });
  await page.goto(pageURL, { timeout: 15000 });
  const sample = () => page.evaluate(() => window.sample());
  async function watch(sec, until) {
    const w = { from: null, to: null, maxStallMs: 0, last: null };
    let lastAdvance = Date.now();
    const end = Date.now() + sec * 1000;
    for (;;) {
      const s = await sample();
      const now = Date.now();
      if (w.from === null) w.from = s.currentTime;
      if (w.last !== null && s.currentTime > w.last.currentTime) lastAdvance = now;
      w.maxStallMs = Math.max(w.maxStallMs, now - lastAdvance);
      w.to = s.currentTime;
      w.last = s;
      if (until && until(s, w)) return w;
      if (now >= end) return w;
      await sleep(200);
    }
  }
  const t0 = Date.now();
  const start = await watch(startTimeout, (s) => s.currentTime > 0 && !s.paused);
  if (!(start.last.currentTime > 0)) {
    result.startError = 'playback did not start';
  } else {
    result.startupMs = Date.now() - t0;
    const play = await watch(playSec * 2 + 10, (s, w) => s.currentTime - w.from >= playSec);
    result.play = { advanced: play.to - play.from, maxStallMs: play.maxStallMs };
    killed = true;
    killedAt = Date.now();
    const resp = await fetch(opt['kill-url']);
    result.killAnswer = resp.status + ' ' + (await resp.text()).trim();
    const after = await watch(afterSec);
    result.after = { advanced: after.to - after.from, maxStallMs: after.maxStallMs, seconds: afterSec };
  }
  result.media = media;
  result.steering = steering;
  const probe = await page.evaluate(() => window.probe);
  result.errors.push(...probe.errors.map((e) => `${e.at} ms: ${e.fatal ? 'fatal ' : ''}${e.type}: ${e.details}`));
  result.fatal = probe.errors.some((e) => e.fatal);
  if (opt.console) await writeFile(resolve(opt.console), consoleLines.join('\n') + '\n');
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
} finally {
  if (context) await context.close().catch(() => {});
  server.close();
  await rm(profile, { recursive: true, force: true }).catch(() => {});
}
out();
process.exit(result.ok ? 0 : 1);

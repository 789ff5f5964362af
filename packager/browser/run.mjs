// run.mjs plays one HLS or DASH URL with hls.js, dash.js or Shaka Player in headless
// Chromium (driven by playwright-core) and prints one JSON object with what
// happened. It judges nothing itself: the Go test asserts on the JSON.
//
//   node packager/browser/run.mjs --url http://127.0.0.1:8080/hls/live/cam/index.m3u8
//       [--player hls|dash|shaka] [--play 5] [--throttle-kbps 600] [--throttle-seconds 20]
//       [--config '{"lowLatencyMode":false}'] [--screenshot shot.png]
//       [--throttle-delay 0.7] [--link-kbps 10000] [--link-latency 20] [--trace] [--console page.log]
//
// Phases: (1) wait up to --start-timeout for playback to start; (2) play
// until currentTime advanced --play seconds; (3) with --throttle-kbps > 0,
// wait up to --top-timeout seconds for the top rendition, then throttle the page's network through the DevTools protocol and watch the
// player for --throttle-seconds (it stops early once the player has shown a
// lower rendition for --settle seconds). Stalls are measured as the longest
// wall-clock time during which currentTime did not advance. --trace adds the
// throttled phase polled every 200 ms to the JSON; --console keeps the page's
// console (hls.js logs there with {"debug":true}, dash.js with
// {"debug":{"logLevel":4}}; Shaka Player from its debug build at its verbose
// level) and the page's requests with their answers. The JSON also counts
// the video element's frames and dropped frames (play.frames/dropped,
// framesBeforeThrottle).
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
    player: { type: 'string' },
    play: { type: 'string', default: '5' },
    'start-timeout': { type: 'string', default: '20' },
    'throttle-kbps': { type: 'string', default: '0' },
    'throttle-seconds': { type: 'string', default: '20' },
    settle: { type: 'string', default: '5' },
    'top-timeout': { type: 'string', default: '15' },
    'throttle-delay': { type: 'string', default: '0' },
    'link-kbps': { type: 'string', default: '0' },
    'link-latency': { type: 'string', default: '20' },
    chromium: { type: 'string', default: process.env.CHROMIUM || '/usr/bin/chromium' },
    screenshot: { type: 'string' },
    config: { type: 'string', default: '{}' },
    console: { type: 'string' },
    trace: { type: 'boolean', default: false },
  },
});

const result = { ok: false, errors: [] };
const out = () => process.stdout.write(JSON.stringify(result) + '\n');

function fail(msg) {
  result.error = msg;
  out();
  process.exit(1);
}

if (!opt.url) fail('--url is required');
const player = opt.player || (/\.mpd(\?|$)/.test(opt.url) ? 'dash' : 'hls');
if (!['hls', 'dash', 'shaka'].includes(player)) fail('--player must be hls, dash or shaka');
result.player = player;
const num = (name) => {
  const v = Number(opt[name]);
  if (!Number.isFinite(v) || v < 0 || v > 600) fail(`--${name}: want a number of 0..600`);
  return v;
};
const playSec = num('play');
const startTimeout = num('start-timeout');
const throttleKbps = num('throttle-kbps');
const throttleSec = num('throttle-seconds');
const settleSec = num('settle');
const topTimeout = num('top-timeout');
const throttleDelay = num('throttle-delay');
// --link-kbps: the page's link before the throttle (0: as fast as loopback).
const linkKbps = Number(opt['link-kbps']);
if (!Number.isFinite(linkKbps) || linkKbps < 0 || linkKbps > 1e6) fail('--link-kbps: want a number of 0..1000000');
// The emulated link's added latency in ms (--link-kbps and --throttle-kbps).
// The emulation also sets navigator.connection.downlink, from which Shaka
// Player takes its first bandwidth estimate (headless Chromium's own is
// ~1.45 Mbit/s on loopback): --link-kbps 10000 --link-latency 0 is a
// desktop browser's estimate (Chromium caps it at 10 Mbit/s) and adds no
// delay on a link the stream does not fill.
const linkLatency = num('link-latency');

// node_modules sits at the repository root, above this directory.
function findModules() {
  for (let d = here; ; d = dirname(d)) {
    const m = join(d, 'node_modules');
    if (existsSync(join(m, 'playwright-core'))) return m;
    if (dirname(d) === d) fail('node_modules with playwright-core not found: run npm ci at the repository root');
  }
}
const modules = findModules();
const files = {
  '/player.html': [join(here, 'player.html'), 'text/html'],
  '/player.js': [join(here, 'player.js'), 'text/javascript'],
  '/hls.min.js': [join(modules, 'hls.js/dist/hls.min.js'), 'text/javascript'],
  '/dash.all.min.js': [join(modules, 'dashjs/dist/modern/umd/dash.all.min.js'), 'text/javascript'],
  // With --console, Shaka's debug build: the release build logs nothing.
  '/shaka-player.compiled.js': [join(modules, `shaka-player/dist/shaka-player.compiled${opt.console ? '.debug' : ''}.js`), 'text/javascript'],
};

// The page comes from its own loopback origin, so the relay's CORS headers
// are exercised as they are for a real site.
const server = createServer(async (req, res) => {
  const f = files[new URL(req.url, 'http://x').pathname];
  if (!f || req.method !== 'GET') {
    res.writeHead(404).end();
    return;
  }
  try {
    const body = await readFile(f[0]);
    res.writeHead(200, { 'content-type': f[1], 'cache-control': 'no-store' }).end(body);
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
try {
  JSON.parse(opt.config);
} catch (e) {
  fail('--config: ' + e.message);
}
const pageURL = `http://127.0.0.1:${server.address().port}/player.html?player=${player}` +
  `&src=${encodeURIComponent(opt.url)}&config=${encodeURIComponent(opt.config)}` + (opt.console ? '&log=1' : '');

const { chromium } = await import(join(modules, 'playwright-core/index.mjs'));
const profile = await mkdtemp(join(tmpdir(), 'relaymesh-chromium-'));
let context;
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

try {
  // A fresh profile directory for every run (playwright passes it as
  // --user-data-dir).
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
  // --console FILE keeps the page's console (hls.js logs there with
  // {"debug":true}), each line stamped with the ms since the page started.
  const consoleLines = [];
  const pageStart = Date.now();
  if (opt.console) {
    page.on('console', (m) => consoleLines.length < 200000 && consoleLines.push(`${Date.now() - pageStart} ${m.type()}: ${m.text()}`));
    // and the player's requests: when each was sent, answered and done.
    const sent = new Map();
    const line = (s) => consoleLines.length < 200000 && consoleLines.push(`${Date.now() - pageStart} net: ${s}`);
    page.on('request', (q) => sent.set(q, Date.now() - pageStart));
    page.on('response', (r) => line(`${r.status()} after ${Date.now() - pageStart - (sent.get(r.request()) ?? 0)} ms ${r.request().url()}`));
    page.on('requestfinished', (q) => line(`done ${Date.now() - pageStart - (sent.get(q) ?? 0)} ms after sent ${q.url()}`));
    page.on('requestfailed', (q) => line(`failed (${q.failure() && q.failure().errorText}) ${q.url()}`));
  }
  // The page's network goes through the DevTools protocol: --link-kbps
  // from the start, --throttle-kbps later.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  const link = (kbps) => cdp.send('Network.emulateNetworkConditions', {
    offline: false, latency: linkLatency, downloadThroughput: (kbps * 1000) / 8, uploadThroughput: (kbps * 1000) / 8,
  });
  if (linkKbps > 0) await link(linkKbps);
  await page.goto(pageURL, { timeout: 15000 });

  const sample = () => page.evaluate(() => window.sample());
  // watch polls the page every 200 ms for up to sec seconds (or until
  // until(s) is true) and tracks progress and the longest stall.
  // With --trace, w.trace gets [ms, currentTime, bufferEnd, level, kbit/s
  // estimate, TTFB estimate in ms (hls.js)] per poll.
  async function watch(sec, until) {
    const w = { from: null, to: null, maxStallMs: 0, samples: 0, trace: [], latencies: [] };
    const t0 = Date.now();
    let last = null;
    let lastAdvance = 0;
    const end = Date.now() + sec * 1000;
    for (;;) {
      const s = await sample();
      w.samples++;
      const now = Date.now();
      if (w.from === null) {
        w.from = s.currentTime;
        lastAdvance = now;
      }
      if (last !== null && s.currentTime > last.currentTime) lastAdvance = now;
      w.maxStallMs = Math.max(w.maxStallMs, now - lastAdvance);
      if (opt.trace) {
        w.trace.push([now - t0, +s.currentTime.toFixed(2), +s.bufferEnd.toFixed(2), s.level ? s.level.index : -1, Math.round(s.bw / 1000), s.ttfb]);
      }
      w.to = s.currentTime;
      if (s.latency > 0) w.latencies.push(s.latency);
      w.last = s;
      last = s;
      if (until && until(s, w)) return w;
      if (now >= end) return w;
      await sleep(200);
    }
  }

  // 1. playback starts
  const t0 = Date.now();
  const start = await watch(startTimeout, (s) => s.currentTime > 0 && !s.paused);
  result.h264 = await page.evaluate(() => window.probe.h264);
  if (!(start.last.currentTime > 0)) {
    result.startError = 'playback did not start';
  } else {
    result.startupMs = Date.now() - t0;
    // 2. plays unthrottled
    const play = await watch(playSec * 2 + 10, (s, w) => s.currentTime - w.from >= playSec);
    result.play = { advanced: play.to - play.from, maxStallMs: play.maxStallMs, seconds: play.samples / 5,
      frames: play.last.frames, dropped: play.last.dropped };
    // How far behind the live edge (hls.js: its latency; dash.js: the
    // wall clock, synchronised by UTCTiming, against the presentation
    // time) over the last half of the playing phase.
    const lat = play.latencies.slice(Math.floor(play.latencies.length / 2)).sort((a, b) => a - b);
    if (lat.length) result.play.latency = { p50: +lat[Math.floor(lat.length / 2)].toFixed(2), max: +lat[lat.length - 1].toFixed(2), n: lat.length };
    result.width = play.last.width;
    result.height = play.last.height;
    result.levelBeforeThrottle = play.last.level;

    // 3. throttled
    if (throttleKbps > 0) {
      // Throttling only tells something from the top rendition: give the
      // player up to --top-timeout seconds to get there.
      const levels = await page.evaluate(() => window.probe.levels);
      // Renditions are compared by the bitrates listed now, looked up by
      // their index: a live manifest's figures move a little from one
      // reload to the next (full at 2,553,420 here, 2,550,444 on the
      // player's level a few seconds later).
      const listed = (l) => (levels.find((x) => x.index === l.index) || l).bitrate || 0;
      const top = Math.max(...levels.map((l) => l.bitrate || 0));
      const warm = await watch(topTimeout, (s) => s.level && listed(s.level) >= top);
      result.levelBeforeThrottle = warm.last.level;
      result.latencyBeforeThrottle = +warm.last.latency.toFixed(2);
      result.topBeforeThrottle = !!(warm.last.level && listed(warm.last.level) >= top);
      // The element's frames and dropped frames so far (Shaka Player bans
      // a rendition for 30 s when 15 % or more of 2 s' frames drop).
      result.framesBeforeThrottle = { total: warm.last.frames, dropped: warm.last.dropped };
      // From the first frame to the top rendition.
      if (result.topBeforeThrottle) result.topAfterMs = Date.now() - t0 - result.startupMs;
      // --throttle-delay moves the throttle's start against the segments
      // (to try every phase of the GOP).
      if (throttleDelay > 0) await sleep(throttleDelay * 1000);
      const probe0 = await page.evaluate(() => window.probe);
      const throttleAt = await page.evaluate(() => Math.round(performance.now()));
      await link(throttleKbps);
      const before = warm.last.level ? listed(warm.last.level) : Infinity;
      let lowerSince = 0;
      const th = await watch(throttleSec, (s) => {
        const lower = s.level && listed(s.level) < before;
        if (!lower) lowerSince = 0;
        else if (!lowerSince) lowerSince = Date.now();
        return lowerSince && Date.now() - lowerSince >= settleSec * 1000;
      });
      const probe1 = await page.evaluate(() => window.probe);
      result.throttle = {
        kbps: throttleKbps,
        advanced: th.to - th.from,
        maxStallMs: th.maxStallMs,
        seconds: th.samples / 5,
        level: th.last.level,
        switchedDown: !!(th.last.level && listed(th.last.level) < before),
        switches: probe1.switches.slice(probe0.switches.length),
        // ms after the throttle began when the player first showed a lower
        // rendition (-1: never)
        downAfterMs: -1,
      };
      const down = result.throttle.switches.find((sw) => listed({ index: sw.to, bitrate: sw.bitrate }) < before);
      if (down) result.throttle.downAfterMs = down.at - throttleAt;
      if (opt.trace) result.throttle.trace = th.trace;
    }
  }
  const probe = await page.evaluate(() => window.probe);
  result.levels = probe.levels;
  result.switches = probe.switches;
  result.errors.push(...probe.errors.map((e) => `${e.at} ms: ${e.fatal ? 'fatal ' : ''}${e.type}: ${e.details}`));
  result.fatal = probe.errors.some((e) => e.fatal);
  if (opt.screenshot) await page.screenshot({ path: resolve(opt.screenshot) });
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

// relaymesh dashboard: draws /api/v1/graph once, then every "mesh" event of
// /api/v1/events (the /api/v1/mesh view plus decisions). No build step.
// The pause button (or ?paused=1 in the address) closes the event stream
// after the snapshot on screen, so the page holds still to be read, printed
// or captured; <body data-settled="true"> says it is drawn and idle.
'use strict';
(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);
  let graph = null, last = null;

  // Equirectangular projection onto the 1000x500 view box.
  const xy = (loc) => [(loc.lon + 180) / 360 * 1000, (90 - loc.lat) / 180 * 500];

  function el(tag, attrs, text) { // an SVG element
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function td(text, cls) { const c = document.createElement('td'); if (cls) c.className = cls; c.textContent = text; return c; }
  function bar(frac, cls, title) {
    const b = document.createElement('span');
    b.className = 'bar ' + (cls || '');
    const i = document.createElement('i');
    i.style.width = Math.max(0, Math.min(1, frac)) * 100 + '%';
    b.appendChild(i);
    if (title) b.title = title;
    return b;
  }
  function fill(tbody, rows) { tbody.replaceChildren(...rows); }

  function drawGraph() {
    const links = $('links'), locs = $('locs');
    for (const [a, b] of graph.links) {
      const [x1, y1] = xy(graph.locations[a]), [x2, y2] = xy(graph.locations[b]);
      if (Math.abs(x1 - x2) > 500) continue; // do not draw across the date line
      links.appendChild(el('line', { x1, y1, x2, y2, class: 'link' }));
    }
    for (const l of graph.locations) {
      const [x, y] = xy(l);
      const c = el('circle', { cx: x, cy: y, r: l.parent ? 1.6 : 4, class: 'loc' + (l.parent ? '' : ' hub') });
      c.appendChild(el('title', {}, l.id + (l.name ? ' — ' + l.name : '')));
      locs.appendChild(c);
    }
  }

  function locByID(id) { return graph && graph.locations.find((l) => l.id === id); }

  function drawMesh(m) {
    if (!graph) return;
    const servers = $('servers'), bonus = $('bonus');
    servers.replaceChildren(); bonus.replaceChildren();
    const all = [{ id: m.primary.id, status: 'primary', viewers: 0, capacity: 0,
      location: (graph.servers.find((s) => s.role === 'primary') || {}).location }].concat(m.relays);
    const perLoc = {};
    for (const r of all) {
      const l = locByID(r.location);
      if (!l) continue;
      const k = perLoc[r.location] = (perLoc[r.location] || 0) + 1;
      let [x, y] = xy(l);
      y += (k - 1) * 18; // servers at one location stack downwards
      const g = el('g', {});
      const c = el('circle', { cx: x, cy: y, r: 6, class: 'srv ' + r.status });
      c.appendChild(el('title', {}, `${r.id} (${r.status}) ${r.viewers || 0}/${r.capacity || '∞'} viewers`));
      g.appendChild(c);
      if (r.capacity) { // load bar under the marker
        g.appendChild(el('rect', { x: x - 8, y: y + 8, width: 16, height: 3, fill: '#e5e7eb' }));
        g.appendChild(el('rect', { x: x - 8, y: y + 8, width: 16 * Math.min(1, r.viewers / r.capacity), height: 3, fill: '#16a34a' }));
      }
      g.appendChild(el('text', { x: x + 8, y: y - 6, class: 'srvlabel' }, r.id));
      servers.appendChild(g);
    }
    for (const b of m.bonus) {
      const l = locByID(b.location);
      if (!l) continue;
      const [x, y] = xy(l);
      const full = 22, r = Math.max(2, full * Math.min(1.5, b.value / b.threshold));
      bonus.appendChild(el('circle', { cx: x, cy: y, r: full, class: 'bonusfull' }));
      const c = el('circle', { cx: x, cy: y, r, class: 'bonusring' });
      c.appendChild(el('title', {}, `${b.app}/${b.name} at ${b.location}: ${b.value.toFixed(2)} of ${b.threshold}`));
      bonus.appendChild(c);
    }
  }

  // byProto renders a protocol breakdown ("rtmp 3 · hls 2").
  function byProto(ps) {
    return (ps || []).filter((p) => p.viewers > 0).map((p) => `${p.protocol} ${p.viewers}`).join(' · ');
  }

  // codecs renders "h264 640×360 · aac".
  function codecs(s) {
    const v = s.video_codec ? s.video_codec + (s.width ? ` ${s.width}×${s.height}` : '') : '';
    return [v, s.audio_codec || ''].filter(Boolean).join(' · ');
  }
  function bitrate(kbps) {
    if (!kbps) return '';
    return kbps >= 1000 ? (kbps / 1000).toFixed(1) + ' Mbit/s' : kbps + ' kbit/s';
  }

  function tables(m) {
    const carried = {};
    for (const s of m.streams) for (const r of s.relays) (carried[r] = carried[r] || []).push(s.app + '/' + s.name);
    fill($('relays').tBodies[0], m.relays.map((r) => {
      const tr = document.createElement('tr');
      const frac = r.capacity ? r.viewers / r.capacity : 0;
      const load = document.createElement('td');
      load.append(bar(frac, frac >= 1 ? 'full' : frac >= 0.8 ? 'hot' : ''), ` ${r.viewers}/${r.capacity || '∞'}`);
      tr.append(td(r.id), td(r.location), td(r.status), load, td(byProto(r.protocols)), td((carried[r.id] || []).join(', '), 'list'));
      return tr;
    }));
    fill($('streams').tBodies[0], m.streams.map((s) => {
      const tr = document.createElement('tr');
      const name = s.app + '/' + s.name;
      const b = document.createElement('button');
      b.textContent = 'play';
      b.onclick = () => { $('play-stream').value = name; play(); };
      const c = document.createElement('td'); c.appendChild(b);
      const where = s.relays.join(', ') || (s.live ? 'primary only' : '(opening)');
      tr.append(td(name), td(where, 'list'), td(`${s.viewers || 0}` + (byProto(s.protocols) ? ` (${byProto(s.protocols)})` : '')),
        td(codecs(s)), td(bitrate(s.bitrate_kbps)), c);
      return tr;
    }));
    $('nostreams').hidden = m.streams.length > 0;
    fill($('bonus-table').tBodies[0], m.bonus.map((b) => {
      const tr = document.createElement('tr');
      const c = document.createElement('td');
      c.append(bar(b.value / b.threshold, 'bonus'), ` ${b.value.toFixed(2)} / ${b.threshold}`);
      tr.append(td(b.app + '/' + b.name), td(b.location), c);
      return tr;
    }));
    $('nobonus').hidden = m.bonus.length > 0;
    fill($('decisions').tBodies[0], m.decisions.map((d) => {
      const tr = document.createElement('tr');
      tr.append(td(new Date(d.time).toLocaleTimeString()), td(d.action), td(d.app ? d.app + '/' + d.name : ''), td(d.server), td(d.reason || '', 'reason'));
      return tr;
    }));
    $('nodecisions').hidden = m.decisions.length > 0;
    $('leader').textContent = m.leader ? 'leader' : 'follower';
    $('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  }

  function render(m) { last = m; drawMesh(m); tables(m); }

  // Player: ask the redirector where to play (as JSON), then play HLS there.
  let hls = null;
  async function play() {
    const stream = $('play-stream').value.trim(), ip = $('play-ip').value.trim();
    if (!/^[^/?#% ]+\/[^/?#% ]+$/.test(stream)) return;
    let q = '/play/' + stream.split('/').map(encodeURIComponent).join('/') + '?proto=hls';
    if (ip) q += '&ip=' + encodeURIComponent(ip);
    const out = $('play-choice');
    try {
      const res = await fetch(q, { headers: { Accept: 'application/json' } });
      if (!res.ok) throw new Error(res.status + ' ' + (await res.text()));
      const ch = await res.json();
      out.textContent = `playing from ${ch.relay} (${ch.location}), reason: ${ch.reason}` +
        (ch.viewer_location ? `, viewer at ${ch.viewer_location}` : '') + ' — ' + ch.url;
      const video = $('video');
      if (hls) { hls.destroy(); hls = null; }
      if (window.Hls && Hls.isSupported()) {
        hls = new Hls({ liveSyncDurationCount: 2 });
        hls.on(Hls.Events.ERROR, (_, e) => { if (e.fatal) out.textContent += ' — player error: ' + e.details; });
        hls.loadSource(ch.url);
        hls.attachMedia(video);
      } else if (video.canPlayType('application/vnd.apple.mpegurl')) {
        video.src = ch.url;
      } else {
        out.textContent = 'this browser cannot play HLS';
        return;
      }
      video.play().catch(() => {});
    } catch (e) {
      out.textContent = 'cannot play: ' + e.message;
    }
  }
  $('play-form').addEventListener('submit', (e) => { e.preventDefault(); play(); });

  // Live updates, or paused: the event stream is closed after the snapshot
  // on screen (the first one when the page opens with ?paused=1).
  const params = new URLSearchParams(location.search);
  let paused = params.has('paused') && params.get('paused') !== '0';
  let es = null;
  function setPaused(p) {
    paused = p;
    $('pause').textContent = p ? 'resume' : 'pause';
    if (p && last) stop();
    if (!p && !es) connect();
  }
  function stop() {
    if (es) { es.close(); es = null; }
    $('conn').textContent = 'paused'; $('conn').className = 'pill';
    document.body.dataset.settled = 'true';
  }
  function connect() {
    delete document.body.dataset.settled;
    es = new EventSource('/api/v1/events');
    es.addEventListener('mesh', (e) => {
      $('conn').textContent = 'live'; $('conn').className = 'pill on';
      try { render(JSON.parse(e.data)); } catch (err) { console.error(err); }
      if (paused) stop();
    });
    es.onerror = () => { if (es) { $('conn').textContent = 'reconnecting…'; $('conn').className = 'pill off'; } };
  }
  $('pause').addEventListener('click', () => setPaused(!paused));
  $('pause').textContent = paused ? 'resume' : 'pause';

  fetch('/api/v1/graph').then((r) => r.json()).then((g) => {
    graph = g; drawGraph(); if (last) render(last);
  }).catch((e) => console.error('graph', e)).finally(connect);
})();

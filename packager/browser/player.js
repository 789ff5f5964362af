// Plays ?src= with the player named by ?player= (hls, dash or shaka) in the page's
// <video> and records what the player did on window.probe, which run.mjs
// reads. Nothing here judges the result: run.mjs and the Go test do.
(function () {
  'use strict';
  var q = new URLSearchParams(location.search);
  var src = q.get('src');
  var kind = q.get('player');
  var video = document.getElementById('v');
  // ?config= is JSON handed to the player: the Hls constructor's config,
  // dash.js settings for updateSettings, or Shaka Player's configure().
  var config = {};
  try {
    config = JSON.parse(q.get('config') || '{}') || {};
  } catch (e) {
    config = {};
  }
  var probe = {
    player: kind,
    levels: [], // video renditions the player knows: {index, bitrate, width, height}
    level: null, // the rendition being shown now
    switches: [], // {at (ms since page start), from, to, bitrate}
    errors: [], // {fatal, type, details}
    h264: window.MediaSource ? MediaSource.isTypeSupported('video/mp4; codecs="avc1.42c01e"') : false,
    started: false,
    config: config
  };
  window.probe = probe;
  // sample is what run.mjs polls.
  window.sample = function () {
    var b = video.buffered;
    var vq = video.getVideoPlaybackQuality ? video.getVideoPlaybackQuality() : {};
    return {
      t: performance.now(),
      currentTime: video.currentTime,
      paused: video.paused,
      readyState: video.readyState,
      width: video.videoWidth,
      height: video.videoHeight,
      bufferEnd: b.length ? b.end(b.length - 1) : 0,
      level: probe.level,
      bw: bandwidth(),
      ttfb: ttfb(),
      latency: latency(),
      switches: probe.switches.length,
      errors: probe.errors.length,
      frames: vq.totalVideoFrames || 0, // the element's frames, and of those dropped
      dropped: vq.droppedVideoFrames || 0
    };
  };
  // bandwidth is the player's throughput estimate in bit/s (0: unknown).
  function bandwidth() {
    var p = window.player;
    try {
      if (kind === 'hls' && p) return Math.round(p.bandwidthEstimate || 0);
      if (kind === 'dash' && p && p.getAverageThroughput) return Math.round((p.getAverageThroughput('video') || 0) * 1000);
      if (kind === 'shaka' && p) return Math.round(p.getStats().estimatedBandwidth || 0);
    } catch (e) {}
    return 0;
  }
  // ttfb is hls.js's time-to-first-byte estimate in ms (0: unknown).
  function ttfb() {
    var p = window.player;
    try {
      if (kind === 'hls' && p) return Math.round(p.ttfbEstimate || 0);
    } catch (e) {}
    return 0;
  }
  // latency is how far behind the live edge the player is, in seconds
  // (hls.js's own measure; dash.js's and Shaka Player's: the wall clock
  // against the presentation time, by PROGRAM-DATE-TIME or the MPD's
  // clock; 0: unknown).
  function latency() {
    var p = window.player;
    try {
      if (kind === 'hls' && p) return p.latency || 0;
      if (kind === 'dash' && p && p.getCurrentLiveLatency) return p.getCurrentLiveLatency() || 0;
      if (kind === 'shaka' && p) return p.getStats().liveLatency || 0;
    } catch (e) {}
    return 0;
  }
  function error(fatal, type, details) {
    if (probe.errors.length < 50) {
      probe.errors.push({ at: Math.round(performance.now()), fatal: !!fatal, type: String(type), details: String(details) });
    }
  }
  function switched(lv) {
    var from = probe.level ? probe.level.index : -1;
    probe.level = lv;
    probe.switches.push({ at: Math.round(performance.now()), from: from, to: lv.index, bitrate: lv.bitrate });
  }
  video.addEventListener('playing', function () { probe.started = true; });
  video.addEventListener('error', function () {
    var e = video.error;
    error(true, 'media', e ? e.code + ' ' + e.message : 'unknown');
  });

  if (!src) {
    error(true, 'page', 'no src');
    return;
  }
  if (kind === 'hls') {
    if (!window.Hls || !Hls.isSupported()) {
      error(true, 'page', 'hls.js not supported here');
      return;
    }
    var hls = new Hls(config);
    window.player = hls;
    hls.on(Hls.Events.MANIFEST_PARSED, function (_, d) {
      probe.levels = d.levels.map(function (l, i) {
        return { index: i, bitrate: l.bitrate, width: l.width, height: l.height };
      });
    });
    hls.on(Hls.Events.LEVEL_SWITCHED, function (_, d) {
      var l = hls.levels[d.level] || {};
      switched({ index: d.level, bitrate: l.bitrate, width: l.width, height: l.height });
    });
    hls.on(Hls.Events.ERROR, function (_, d) {
      var why = d.err && d.err.message ? ' (' + d.err.message + ')' : d.reason ? ' (' + d.reason + ')' : '';
      error(d.fatal, d.type, d.details + why + (d.sourceBufferName ? ' ' + d.sourceBufferName : '') +
        (d.frag ? ' ' + d.frag.type + ' level ' + d.frag.level + ' sn ' + d.frag.sn + (d.part ? ' part ' + d.part.index : '') : ''));
    });
    hls.loadSource(src);
    hls.attachMedia(video);
  } else if (kind === 'dash') {
    if (!window.dashjs) {
      error(true, 'page', 'dash.js not loaded');
      return;
    }
    var p = dashjs.MediaPlayer().create();
    p.updateSettings(config);
    window.player = p;
    var ev = dashjs.MediaPlayer.events;
    var rep = function (r) {
      return { index: r.absoluteIndex, bitrate: r.bandwidth, width: r.width, height: r.height, id: r.id };
    };
    p.on(ev.STREAM_INITIALIZED, function () {
      probe.levels = p.getRepresentationsByType('video').map(rep);
    });
    p.on(ev.QUALITY_CHANGE_RENDERED, function (e) {
      if (e.mediaType === 'video' && e.newRepresentation) {
        switched(rep(e.newRepresentation));
      }
    });
    p.on(ev.ERROR, function (e) {
      var er = e.error || {};
      error(true, 'dash', (er.code || '') + ' ' + (er.message || ''));
    });
    p.initialize(video, src, true);
  } else if (kind === 'shaka') {
    if (!window.shaka) {
      error(true, 'page', 'Shaka Player not loaded');
      return;
    }
    shaka.polyfill.installAll();
    // ?log=1 (run.mjs --console, which serves Shaka's debug build): its
    // log at the verbose level, ABR decisions included.
    if (q.get('log') && shaka.log && shaka.log.setLevel) shaka.log.setLevel(shaka.log.Level.V2);
    if (!shaka.Player.isBrowserSupported()) {
      error(true, 'page', 'Shaka Player not supported here');
      return;
    }
    var sp = new shaka.Player();
    window.player = sp;
    var track = function (t) {
      return { index: t.id, bitrate: t.videoBandwidth || t.bandwidth, width: t.width, height: t.height, id: t.originalVideoId || '' };
    };
    // The renditions are its variants with video, one per video bitrate.
    var videoTracks = function () {
      var seen = {};
      return sp.getVariantTracks().filter(function (t) {
        var k = t.videoBandwidth || t.bandwidth;
        if (!t.width || seen[k]) return false;
        seen[k] = true;
        return true;
      }).map(track);
    };
    var active = function () {
      var a = sp.getVariantTracks().filter(function (t) { return t.active; })[0];
      if (!a) return;
      var lv = track(a);
      if (!probe.level || probe.level.bitrate !== lv.bitrate) switched(lv);
    };
    sp.addEventListener('trackschanged', function () { probe.levels = videoTracks(); active(); });
    sp.addEventListener('adaptation', active);
    sp.addEventListener('variantchanged', active);
    sp.addEventListener('error', function (e) {
      var d = e.detail || {};
      error(d.severity === 2, 'shaka', (d.code || '') + ' ' + (d.data ? JSON.stringify(d.data).slice(0, 300) : ''));
    });
    sp.configure(config);
    sp.attach(video).then(function () { return sp.load(src); }).then(function () {
      probe.levels = videoTracks();
      active();
    }).catch(function (e) {
      error(true, 'shaka', 'load: ' + (e && e.code ? e.code : String(e)));
    });
  } else {
    error(true, 'page', 'unknown player ' + kind);
  }
})();

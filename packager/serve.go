package packager

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serve answers one request for a file of the stream.
func (st *stream) serve(w http.ResponseWriter, r *http.Request, req fileReq) {
	switch req.kind {
	case fileMultivariant, fileMedia, fileManifest:
		st.servePlaylist(w, r, req)
	case fileInit:
		st.serveInit(w, r, req)
	case fileSegment, fileTS, fileSegmentTime, fileSegmentIndex:
		st.serveSegment(w, r, req)
	case filePart:
		st.servePart(w, r, req)
	default:
		httpError(w, http.StatusNotFound, cacheNotFound)
	}
}

// waitError answers a failed wait.
func waitError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, context.Canceled):
		return // the client went away
	case errors.Is(err, errEnded):
		httpError(w, http.StatusNotFound, cacheNotFound) // it will never come
		return
	}
	retryLater(w)
}

// hasComplete reports whether a playlist can be made; st.mu is held.
func (st *stream) hasComplete() bool { return len(st.seg.complete()) > 0 }

// dashWindowReady reports whether an MPD can be made that a player can
// start from: its complete segments cover the suggestedPresentationDelay
// it asks for (see dashDelay), or it is low-latency DASH (whose players
// aim at its latency target, not at that delay). A player given the MPD
// of a young stream, a segment or two, starts at the live edge instead of
// the delay behind it and stalls for every next segment (dash.js did, 2 s
// at a time, on a relay whose packager started with it), so the first
// request for the MPD of a stream waits until the window covers the delay
// (at most two MaxWait, then it gets what there is). Only the first: once
// served so, later requests (a player's refreshes, whatever the window)
// do not wait. st.mu is held.
func (st *stream) dashWindowReady() bool {
	segs := st.seg.complete()
	if len(segs) == 0 {
		return false
	}
	if st.dashStarted || st.lowLatency() {
		return true
	}
	var window, longest time.Duration
	for _, seg := range segs {
		d := time.Duration(seg.dur) * time.Millisecond
		window += d
		longest = max(longest, d)
	}
	st.dashStarted = window >= dashDelay(st.p.cfg.SegmentMinDuration, max(st.segMax, longest))
	return st.dashStarted
}

func (st *stream) servePlaylist(w http.ResponseWriter, r *http.Request, req fileReq) {
	msn, part, blocking, err := blockingParams(r)
	if err != nil {
		httpError(w, http.StatusBadRequest, cacheNone)
		return
	}
	cond := st.hasComplete
	if req.muxed || req.tsPlay {
		part = -1 // no parts: a segment-level blocking reload
	}
	if blocking && req.kind == fileMedia {
		cond = func() bool { return st.hasComplete() && st.reached(req.rend, msn, part) }
		st.mu.Lock()
		// The spec: a request more than two segments ahead is an error.
		if st.seg.current() != nil && msn > st.seg.next()+1 {
			st.mu.Unlock()
			httpError(w, http.StatusBadRequest, cacheNone)
			return
		}
		st.mu.Unlock()
	}
	if req.kind == fileManifest && !st.p.cfg.DASHStartAtOnce {
		cond = st.dashWindowReady
	}
	err = st.waitFor(r.Context(), cond)
	if req.kind == fileManifest && !st.p.cfg.DASHStartAtOnce && errors.Is(err, context.DeadlineExceeded) {
		// A young stream: its window may take two waits to cover the
		// delay; past them, what there is.
		st.mu.Unlock()
		if err = st.waitFor(r.Context(), cond); errors.Is(err, context.DeadlineExceeded) && st.hasComplete() {
			err = nil
			st.dashStarted = true // the waits ran out: from now on, what there is
		}
	}
	if err != nil && !(errors.Is(err, errEnded) && st.hasComplete()) {
		// An ended stream answers blocking reloads at once, with its last
		// playlist (EXT-X-ENDLIST).
		st.mu.Unlock()
		waitError(w, err)
		return
	}
	if !blocking && req.kind == fileMedia && !req.muxed && !req.tsPlay && st.firstLoad(req.client, req.rend, st.p.now()) {
		if err := st.freshen(r.Context(), req.rend); err != nil {
			st.mu.Unlock()
			waitError(w, err)
			return
		}
	}
	if req.kind == fileMedia && (!st.seg.current().hasRendition(req.rend) && !req.muxed || req.muxed && !st.muxedOffered()) ||
		req.tsPlay && !st.tsPlayOffered(req.rend, req.kind) {
		st.mu.Unlock()
		httpError(w, http.StatusNotFound, cacheNotFound)
		return
	}
	key, kind, ctype := "", "hls", ctypeM3U8
	switch req.kind {
	case fileMultivariant:
		key = "index.m3u8"
		if req.tsPlay {
			key = tsPlayName
		}
	case fileMedia:
		key = req.rend.String() + ".m3u8"
		switch {
		case req.muxed:
			key = muxedName + ".m3u8"
		case req.tsPlay:
			key = tsPlayPrefix + key
		}
	case fileManifest:
		key, kind, ctype = "manifest.mpd|"+st.p.baseURL(r)+manifestDir(r, st.app, st.name), "dash", ctypeMPD
		if wantsNumber(r, req) {
			key = "number.mpd|" + st.p.baseURL(r) + manifestDir(r, st.app, st.name)
		}
	}
	out, err := st.render(key, kind, func() ([]byte, error) {
		switch req.kind {
		case fileMultivariant:
			if req.tsPlay {
				return st.steerHLS(st.tsPlayMultivariant())
			}
			return st.steerHLS(st.multivariant())
		case fileMedia:
			switch {
			case req.muxed:
				return st.muxedPlaylist()
			case req.tsPlay:
				return st.tsPlayPlaylist(req.rend)
			}
			return st.mediaPlaylist(req.rend)
		}
		return st.renderMPD(st.p.baseURL(r), manifestDir(r, st.app, st.name), wantsNumber(r, req))
	})
	var body []byte
	var etag string
	gz := err == nil && acceptsGzip(r)
	if gz {
		if out.gz == nil {
			out.gz = gzipBytes(out.body)
		}
		// Each representation has its own strong validator.
		body, etag = out.gz, strings.TrimSuffix(out.etag, `"`)+`-gz"`
	} else if err == nil {
		body, etag = out.body, out.etag
	}
	st.mu.Unlock()
	if err != nil {
		st.log.Error("render", "file", key, "err", err)
		httpError(w, http.StatusInternalServerError, cacheNone)
		return
	}
	h := w.Header()
	h.Set("Vary", "Accept-Encoding")
	if req.kind == fileManifest {
		// The manifest's BaseURL and UTCTiming name the host asked for.
		// manifest.mpd is the $Number$ manifest for GStreamer (number.go).
		h.Set("Vary", "Accept-Encoding, X-Forwarded-Host, X-Forwarded-Proto, User-Agent")
	}
	if gz {
		h.Set("Content-Encoding", "gzip")
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	st.p.serveBytes(w, r, body, ctype, cachePlaylist, etag, time.Time{})
}

// freshen holds a player's first load of the low-latency playlist of
// rendition r (a request without _HLS_msn: firstLoad; a plain poller's
// requests are answered at once) until its next part is out, unless the
// newest one is less than a quarter of a part old; st.mu is held on entry
// and on return. A player computes where it starts (PART-HOLD-BACK behind
// the edge) from the first playlist it loads, and keeps that distance: a
// playlist answered just before a part is cut puts it up to a part further
// behind the encoder for good. The wait is bounded (one and a half part
// targets; past that, what there is): a CDN fetching the playlist for the
// first time gets it at most that much later, and fresher, and its polls
// after it at once. A nil error means: answer now, with what there is.
func (st *stream) freshen(ctx context.Context, r Rendition) error {
	sess := st.seg.current()
	t := sess.byRend[r]
	if st.ended || t == nil || !t.parts || st.app_.HLS != HLSLowLatency {
		return nil
	}
	pt := max(st.seg.longestPart(), st.p.cfg.PartTarget)
	if st.p.now().Sub(st.seg.lastPartAt()) < pt/4 {
		return nil
	}
	msn, part := st.seg.next(), 0
	if cur := st.seg.inProgress(); cur != nil && cur.sess == sess {
		msn, part = cur.msn, len(cur.track(r).parts)
	}
	st.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, pt*3/2)
	defer cancel()
	err := st.waitFor(wctx, func() bool { return st.reached(r, msn, part) })
	switch {
	case err == nil, errors.Is(err, errEnded):
		return nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil // no part within the bound: what there is
	}
	return err
}

// render returns the cached rendering of key for the current version, or
// renders it once; st.mu is held, so concurrent requests share one rendering.
func (st *stream) render(key, kind string, fn func() ([]byte, error)) (*rendered, error) {
	v := st.seg.changes()
	if c := st.cache[key]; c != nil && c.version == v {
		return c, nil
	}
	body, err := fn()
	if err != nil {
		return nil, err
	}
	st.p.m.renders.WithLabelValues(kind).Inc()
	c := &rendered{version: v, body: body, etag: `"` + st.seg.current().id + "-" + strconv.FormatUint(v, 36) + `"`, mod: st.p.now()}
	if len(st.cache) > 16 {
		clear(st.cache) // bounded: a few keys per base URL
	}
	st.cache[key] = c
	return c, nil
}

// blockingParams reads _HLS_msn and _HLS_part.
func blockingParams(r *http.Request) (msn uint64, part int, blocking bool, err error) {
	if r.URL.RawQuery == "" {
		return 0, -1, false, nil
	}
	q := r.URL.Query()
	m := q.Get("_HLS_msn")
	p := q.Get("_HLS_part")
	if m == "" {
		if p != "" {
			return 0, 0, false, errors.New("_HLS_part without _HLS_msn")
		}
		return 0, -1, false, nil
	}
	msn, err = strconv.ParseUint(m, 10, 63)
	if err != nil {
		return 0, 0, false, err
	}
	part = -1
	if p != "" {
		pn, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return 0, 0, false, err
		}
		part = int(pn)
	}
	return msn, part, true, nil
}

// reached reports whether the playlist of rendition r contains segment msn
// (part == -1) or part `part` of it; st.mu is held.
func (st *stream) reached(r Rendition, msn uint64, part int) bool {
	segs := st.seg.complete()
	if len(segs) > 0 && segs[len(segs)-1].msn >= msn {
		return true
	}
	if part < 0 {
		return false
	}
	cur := st.seg.inProgress()
	if cur == nil || cur.msn < msn {
		return false
	}
	if cur.msn > msn {
		return true
	}
	t := st.seg.current().byRend[r]
	if t == nil || !t.parts {
		return false
	}
	return len(cur.tracks[trackIndex(st.seg.current(), t)].parts) > part
}

func (st *stream) serveInit(w http.ResponseWriter, r *http.Request, req fileReq) {
	if err := st.waitFor(r.Context(), func() bool { return st.seg.current() != nil }); err != nil {
		st.mu.Unlock()
		waitError(w, err)
		return
	}
	// The current session, or an earlier one whose segments are still listed.
	sess := st.seg.session(req.sid)
	if sess != nil && req.muxed {
		init, err := muxedInit(sess)
		st.mu.Unlock()
		if err != nil {
			httpError(w, http.StatusNotFound, cacheNotFound)
			return
		}
		st.p.serveBytes(w, r, init, ctypeMP4V, cacheMedia, `"`+req.sid+"-"+muxedName+`-init"`, time.Time{})
		return
	}
	st.mu.Unlock()
	if sess == nil {
		httpError(w, http.StatusNotFound, cacheNotFound)
		return
	}
	t := sess.byRend[req.rend]
	if t == nil {
		httpError(w, http.StatusNotFound, cacheNotFound)
		return
	}
	ctype := ctypeMP4V
	if !t.video {
		ctype = ctypeMP4A
	}
	st.p.serveBytes(w, r, t.init, ctype, cacheMedia, `"`+req.sid+"-"+req.rend.String()+`-init"`, time.Time{})
}

// lookup finds the segment a request names; st.mu is held.
func (st *stream) lookup(req fileReq) *segment {
	if req.kind == fileSegmentIndex {
		return st.byIndex(req)
	}
	if req.kind != fileSegmentTime {
		return st.seg.find(req.sid, req.n)
	}
	sess := st.seg.session(req.sid)
	if sess == nil || sess.byRend[req.rend] == nil {
		return nil
	}
	t := sess.byRend[req.rend]
	i := trackIndex(sess, t)
	for _, seg := range st.seg.kept() {
		if seg.sess == sess && seg.tracks[i].hasStart && seg.tracks[i].start == req.n {
			return seg
		}
	}
	// A low-latency manifest lists the segment in progress with an assumed
	// duration (the previous one's); audio segments vary by a few AAC
	// frames, so a player's next $Time$ can miss the next segment's start
	// by up to ~150 ms until the manifest is updated. Such a time names the
	// segment starting nearest it, within a quarter of the shortest
	// segment (segments are at least SegmentMinDuration apart, so no
	// other segment can be that near).
	if !st.lowLatency() {
		return nil
	}
	tol := uint64(st.p.cfg.SegmentMinDuration.Seconds() * float64(t.timescale) / 4)
	for _, seg := range st.seg.kept() {
		if seg.sess == sess && seg.tracks[i].hasStart && absDiff(seg.tracks[i].start, req.n) <= tol {
			return seg
		}
	}
	return nil
}

// upcoming reports whether req names a segment that has not started yet
// but may soon: the next number, or (DASH $Time$) a time a little after the
// newest segment's start; st.mu is held.
func (st *stream) upcoming(req fileReq) bool {
	sess := st.seg.current()
	if st.ended || sess == nil || (sess.id != req.sid && sess.tid != req.sid) {
		return false
	}
	if req.kind == fileSegmentIndex {
		return st.indexUpcoming(req)
	}
	if req.kind != fileSegmentTime {
		return req.n == st.seg.next()
	}
	t := sess.byRend[req.rend]
	if t == nil {
		return false
	}
	i := trackIndex(sess, t)
	var last uint64
	found := false
	for _, seg := range st.seg.kept() {
		if seg.sess == sess && seg.tracks[i].hasStart {
			last, found = seg.tracks[i].start, true
		}
	}
	if !found {
		return false
	}
	ahead := 3 * max(st.segMax, st.p.cfg.SegmentMinDuration)
	limit := last + uint64(ahead.Seconds()*float64(t.timescale))
	return req.n > last && req.n <= limit
}

// segmentData returns what exists of the requested file of seg; st.mu is held.
func (st *stream) segmentData(seg *segment, req fileReq) (data []byte, done, ok bool) {
	if req.muxed {
		if !seg.done {
			return nil, false, true
		}
		b, err := muxedSegment(seg)
		return b, true, err == nil
	}
	if req.kind == fileTS {
		ts := seg.ts[req.rend]
		if ts == nil && st.app_.HLS != HLSMPEGTS {
			if !seg.done {
				// ts.m3u8's files are made once their segment is complete.
				tr, ok := tsPlayRendition(seg.sess)
				return nil, false, ok && tr == req.rend
			}
			ts = st.tsPlayFile(seg, req.rend)
		}
		if ts == nil {
			return nil, false, false
		}
		return ts.data, ts.done, true
	}
	t := seg.sess.byRend[req.rend]
	if t == nil {
		return nil, false, false
	}
	return seg.tracks[trackIndex(seg.sess, t)].data, seg.done, true
}

// serveSegment serves a segment. A segment addressed by number (HLS) is
// served only once complete: HLS playlists list complete segments only, so
// only a player guessing ahead asks for one in progress, and holding or
// streaming it would make its download last as long as its media; a player
// that times downloads to estimate bandwidth would then settle on the
// lowest rendition. It gets 404, not cached. A segment addressed by time
// (DASH $Time$) that has not started yet, or is in progress, is waited for
// and streamed as it grows (chunked CMAF for low-latency DASH players, which
// measure throughput by chunk).
func (st *stream) serveSegment(w http.ResponseWriter, r *http.Request, req fileReq) {
	var seg *segment
	byNumber := req.kind != fileSegmentTime && req.kind != fileSegmentIndex
	err := st.waitFor(r.Context(), func() bool {
		seg = st.lookup(req)
		return seg != nil || byNumber || !st.upcoming(req)
	})
	if err != nil {
		st.mu.Unlock()
		waitError(w, err)
		return
	}
	if seg == nil {
		soon := st.upcoming(req)
		st.mu.Unlock()
		if soon {
			httpError(w, http.StatusNotFound, cacheNone)
			return
		}
		httpError(w, http.StatusNotFound, cacheNotFound)
		return
	}
	data, done, ok := st.segmentData(seg, req)
	st.mu.Unlock()
	if !ok {
		httpError(w, http.StatusNotFound, cacheNotFound)
		return
	}
	if !done && byNumber {
		httpError(w, http.StatusNotFound, cacheNone) // complete soon: not cached
		return
	}
	ctype := ctypeMP4V
	switch {
	case req.kind == fileTS:
		ctype = ctypeTS
	case req.rend == Audio:
		ctype = ctypeMP4A
	}
	if done {
		st.p.serveBytes(w, r, data, ctype, cacheMedia, segmentETag(req, seg), seg.wall)
		return
	}
	st.streamSegment(w, r, seg, req, ctype)
}

func segmentETag(req fileReq, seg *segment) string {
	name := req.rend.String()
	if req.muxed {
		name = muxedName
	}
	return `"` + req.sid + "-" + name + "-" + strconv.FormatUint(seg.msn, 10) + "-" + strconv.Itoa(int(req.kind)) + `"`
}

// streamSegment sends a segment that is still being written, chunk by chunk
// as it grows, from the one buffer every reader shares. Each chunk's write
// has its own deadline: a slow client loses its response, nobody else waits.
func (st *stream) streamSegment(w http.ResponseWriter, r *http.Request, seg *segment, req fileReq, ctype string) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", cacheMedia)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the headers now: the body follows as it is made
	off := 0
	deadline := time.Now().Add(st.p.cfg.MaxWait + st.p.cfg.SegmentMinDuration*4)
	for {
		st.mu.Lock()
		data, done, _ := st.segmentData(seg, req)
		ch, stopped := st.changed, st.stopped
		st.mu.Unlock()
		if off < len(data) {
			_ = rc.SetWriteDeadline(time.Now().Add(st.p.cfg.WriteTimeout))
			if _, err := w.Write(data[off:]); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			off = len(data)
		}
		if done || stopped {
			return
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return // a segment that never ends: give up; the client retries
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
		t.Stop()
	}
}

func (st *stream) servePart(w http.ResponseWriter, r *http.Request, req fileReq) {
	var p *part
	gone := false
	err := st.waitFor(r.Context(), func() bool {
		seg := st.seg.find(req.sid, req.n)
		if seg == nil {
			gone = !st.upcoming(req)
			return gone
		}
		t := seg.sess.byRend[req.rend]
		if t == nil || !t.parts {
			gone = true
			return true
		}
		parts := seg.tracks[trackIndex(seg.sess, t)].parts
		if req.part < len(parts) {
			p = parts[req.part]
			return true
		}
		gone = seg.done // the segment ended before this part
		return gone
	})
	st.mu.Unlock()
	if err != nil {
		waitError(w, err)
		return
	}
	if gone || p == nil {
		httpError(w, http.StatusNotFound, cacheNotFound)
		return
	}
	ctype := ctypeMP4V
	if req.rend == Audio {
		ctype = ctypeMP4A
	}
	etag := `"` + req.sid + "-" + req.rend.String() + "-" + strconv.FormatUint(req.n, 10) + "." + strconv.Itoa(req.part) + `"`
	st.p.serveBytes(w, r, p.data, ctype, cacheMedia, etag, time.Time{})
}

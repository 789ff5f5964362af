package packager

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Cache-Control values. Playlists and manifests change every part; media
// files never change once complete and their names never repeat.
const (
	cachePlaylist = "public, max-age=1"
	cacheMedia    = "public, max-age=86400, immutable"
	cacheNotFound = "public, max-age=1"
	cacheNone     = "no-store"
)

// Content types.
const (
	ctypeM3U8 = "application/vnd.apple.mpegurl"
	ctypeMPD  = "application/dash+xml"
	ctypeMP4V = "video/mp4"
	ctypeMP4A = "audio/mp4"
	ctypeTS   = "video/mp2t"
)

// maxNameLen bounds app and stream names in URLs.
const maxNameLen = 128

// validName accepts the app and stream names the packager serves: letters,
// digits and - _ . (not starting with a dot).
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// statusWriter records the status and counts body bytes.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// corsHeaders are the CORS headers of every answer, canonical keys and
// values made once: each response's header map shares the value slices
// (nothing writes into them; a Set or Add elsewhere replaces or regrows
// them).
var corsHeaders = []struct {
	key string
	val []string
}{
	{"Access-Control-Allow-Origin", []string{"*"}},
	{"Access-Control-Allow-Methods", []string{"GET, HEAD, OPTIONS"}},
	{"Access-Control-Allow-Headers", []string{"Range, If-None-Match, If-Modified-Since"}},
	{"Access-Control-Expose-Headers", []string{"Content-Length, Content-Range, ETag, Last-Modified, Date"}},
	{"Access-Control-Max-Age", []string{"86400"}},
	// Resource Timing shows a page on another origin the sizes and times
	// of a cross-origin answer only with Timing-Allow-Origin. dash.js
	// measures throughput from them; without them it falls back to its
	// request's own timing and takes any video segment loaded in under
	// 10 ms for a cache hit, so on a fast link a small rung (the key-only
	// one, ~25 KB a segment) gives it no sample at all and it stays on its
	// first guess.
	{"Timing-Allow-Origin", []string{"*"}},
}

func setCORS(h http.Header) {
	for _, c := range corsHeaders {
		h[c.key] = c.val
	}
}

func (p *Packager) serveHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	setCORS(w.Header())
	served := servedPlaylist
	var aud *audience // set once the stream is known
	proto := ""
	defer func() {
		if aud != nil {
			aud.served(protoIndex(proto), sw.bytes)
		}
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		p.m.request(code)
		if sw.bytes > 0 {
			p.m.served[served].Add(float64(sw.bytes))
		}
	}()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		sw.WriteHeader(http.StatusNoContent)
		return
	default:
		sw.Header().Set("Allow", "GET, HEAD, OPTIONS")
		httpError(sw, http.StatusMethodNotAllowed, cacheNone)
		return
	}
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/hls/"):
		proto, path = "hls", path[len("/hls/"):]
	case strings.HasPrefix(path, "/dash/"):
		proto, path = "dash", path[len("/dash/"):]
	default:
		httpError(sw, http.StatusNotFound, cacheNotFound)
		return
	}
	if proto == "dash" && path == "time" {
		p.serveTime(sw)
		return
	}
	parts := strings.Split(path, "/")
	if len(parts) != 3 || !validName(parts[0]) || !validName(parts[1]) || parts[2] == "" || len(parts[2]) > maxNameLen {
		httpError(sw, http.StatusNotFound, cacheNotFound)
		return
	}
	app, name, file := parts[0], parts[1], parts[2]
	// Ask the source only for names that could be files of ours.
	req, ok := parseFile(proto, file)
	if !ok {
		httpError(sw, http.StatusNotFound, cacheNotFound)
		return
	}
	switch {
	case req.muxed && req.kind != fileMedia:
		served = servedMuxed
	case req.kind != fileManifest && req.kind != fileMultivariant && req.kind != fileMedia:
		served = int(req.rend)
	}
	st, err := p.stream(r.Context(), app, name)
	if err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			httpError(sw, http.StatusNotFound, cacheNotFound)
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			retryLater(sw)
		default:
			p.cfg.Logger.Warn("stream unavailable", "app", app, "stream", name, "err", err)
			retryLater(sw)
		}
		return
	}
	key, now := viewerKey(r), p.now()
	n := st.viewers.touch(key, now)
	st.viewerGauge.Set(float64(n))
	aud = st.audience
	aud.touch(protoIndex(proto), key, now)
	req.client = key
	st.serve(sw, r, req)
}

// httpError writes a short error response.
func httpError(w http.ResponseWriter, code int, cache string) {
	h := w.Header()
	h.Set("Cache-Control", cache)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(http.StatusText(code) + "\n"))
}

// retryLater answers 503 with Retry-After: the stream has no keyframe yet,
// or the file is not ready within the wait bound.
func retryLater(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	httpError(w, http.StatusServiceUnavailable, cacheNone)
}

func (p *Packager) serveTime(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", cacheNone)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(p.now().UTC().Format("2006-01-02T15:04:05.000Z")))
}

// serveBytes serves a complete, immutable body. A plain GET or HEAD (the
// players' case) is answered directly: the headers, then the shared buffer
// in one Write (net/http hands a large write to the connection in one go,
// with no copy and no 32 KB copy loop). Conditional and Range requests go
// through http.ServeContent. The write is bounded by WriteTimeout.
func (p *Packager) serveBytes(w http.ResponseWriter, r *http.Request, body []byte, ctype, cache, etag string, mod time.Time) {
	h := w.Header()
	h["Content-Type"] = constValue(ctype)
	h["Cache-Control"] = constValue(cache)
	if etag != "" {
		h.Set("ETag", etag)
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(p.cfg.WriteTimeout))
	if plainRequest(r) {
		if !mod.IsZero() {
			h.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
		}
		h["Accept-Ranges"] = acceptRanges
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
		return
	}
	http.ServeContent(w, r, "", mod, bytes.NewReader(body))
}

// Header values made once, shared by every response's header map like
// corsHeaders.
var (
	acceptRanges = []string{"bytes"}
	constValues  = map[string][]string{}
)

func init() {
	for _, v := range []string{ctypeM3U8, ctypeMPD, ctypeMP4V, ctypeMP4A, ctypeTS, cachePlaylist, cacheMedia, cacheNotFound, cacheNone} {
		constValues[v] = []string{v}
	}
}

// constValue returns the shared header value v (one of the constants
// above), or a new one.
func constValue(v string) []string {
	if c, ok := constValues[v]; ok {
		return c
	}
	return []string{v}
}

// plainRequest reports whether r is neither conditional nor a range request.
func plainRequest(r *http.Request) bool {
	for _, k := range []string{"Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"} {
		if _, ok := r.Header[k]; ok {
			return false
		}
	}
	return true
}

// fileKind says what a request asks for.
type fileKind uint8

const (
	fileMultivariant fileKind = iota + 1 // HLS index.m3u8
	fileMedia                            // HLS {rendition}.m3u8
	fileManifest                         // DASH manifest.mpd
	fileInit                             // {sid}_{rendition}_init.mp4
	fileSegment                          // {sid}_{rendition}_{msn}.m4s
	filePart                             // {sid}_{rendition}_{msn}.{part}.m4s
	fileSegmentTime                      // {sid}_{rendition}_t{time}.m4s (DASH $Time$)
	fileTS                               // {sid}_{rendition}_{msn}.ts
	fileSegmentIndex                     // {sid}_{rendition}_d{n}.m4s (DASH $Number$ on the nominal grid, see numberManifest)
)

// fileReq is a parsed file name.
type fileReq struct {
	kind fileKind
	rend Rendition
	sid  string
	n    uint64 // msn, or time for fileSegmentTime, or index for fileSegmentIndex
	part int    // part number; for fileManifest, manifestNumber or 0
	// muxed: a file of the muxed playlist (muxed.go; rend is Full): the
	// playlist, its init segment or a segment by number.
	muxed bool
	// tsPlay: a playlist of the MPEG-TS playlist (tsplay.go): ts.m3u8
	// (fileMultivariant) or ts_{rendition}.m3u8 (fileMedia). Its segments
	// are fileTS.
	tsPlay bool
	// client is the requesting client (viewerKey), set when it is served.
	client string
}

// manifestNumber marks a request for the manifest addressed by $Number$
// (number.mpd, see numberManifest).
const manifestNumber = 1

// parseFile parses the last path element of a request.
func parseFile(proto, file string) (fileReq, bool) {
	switch {
	case proto == "hls" && file == "index.m3u8":
		return fileReq{kind: fileMultivariant}, true
	case proto == "dash" && file == "manifest.mpd":
		return fileReq{kind: fileManifest}, true
	case proto == "dash" && file == "number.mpd":
		return fileReq{kind: fileManifest, part: manifestNumber}, true
	case proto == "hls" && file == muxedName+".m3u8":
		return fileReq{kind: fileMedia, rend: Full, muxed: true}, true
	case proto == "hls" && file == tsPlayName:
		return fileReq{kind: fileMultivariant, tsPlay: true}, true
	case proto == "hls" && strings.HasPrefix(file, tsPlayPrefix) && strings.HasSuffix(file, ".m3u8"):
		r, ok := parseRendition(strings.TrimSuffix(file[len(tsPlayPrefix):], ".m3u8"))
		return fileReq{kind: fileMedia, rend: r, tsPlay: true}, ok && (r == Full || r == Audio)
	case proto == "hls" && strings.HasSuffix(file, ".m3u8"):
		r, ok := parseRendition(strings.TrimSuffix(file, ".m3u8"))
		return fileReq{kind: fileMedia, rend: r}, ok
	}
	sid, rest, ok := strings.Cut(file, "_")
	if !ok || len(sid) != 8 {
		return fileReq{}, false
	}
	rname, rest, ok := strings.Cut(rest, "_")
	if !ok {
		return fileReq{}, false
	}
	if rname == muxedName && proto == "hls" {
		return parseMuxed(sid, rest)
	}
	rend, ok := parseRendition(rname)
	if !ok {
		return fileReq{}, false
	}
	req := fileReq{rend: rend, sid: sid}
	switch {
	case rest == "init.mp4":
		req.kind = fileInit
		return req, true
	case strings.HasSuffix(rest, ".ts") && proto == "hls":
		n, err := strconv.ParseUint(strings.TrimSuffix(rest, ".ts"), 10, 63)
		req.kind, req.n = fileTS, n
		return req, err == nil
	case strings.HasSuffix(rest, ".m4s"):
		rest = strings.TrimSuffix(rest, ".m4s")
		if t, ok := strings.CutPrefix(rest, "t"); ok {
			n, err := strconv.ParseUint(t, 10, 63)
			req.kind, req.n = fileSegmentTime, n
			return req, err == nil
		}
		if d, ok := strings.CutPrefix(rest, "d"); ok && proto == "dash" {
			n, err := strconv.ParseUint(d, 10, 32)
			req.kind, req.n = fileSegmentIndex, n
			return req, err == nil
		}
		ms, ps, isPart := strings.Cut(rest, ".")
		n, err := strconv.ParseUint(ms, 10, 63)
		if err != nil {
			return req, false
		}
		req.kind, req.n = fileSegment, n
		if isPart {
			pn, err := strconv.ParseUint(ps, 10, 16)
			if err != nil {
				return req, false
			}
			req.kind, req.part = filePart, int(pn)
		}
		return req, true
	}
	return fileReq{}, false
}

// parseMuxed parses what follows "{sid}_muxed_": the init segment or a
// segment by number (the muxed playlist has no parts).
func parseMuxed(sid, rest string) (fileReq, bool) {
	req := fileReq{rend: Full, sid: sid, muxed: true}
	if rest == "init.mp4" {
		req.kind = fileInit
		return req, true
	}
	ms, ok := strings.CutSuffix(rest, ".m4s")
	if !ok {
		return fileReq{}, false
	}
	n, err := strconv.ParseUint(ms, 10, 63)
	if err != nil {
		return fileReq{}, false
	}
	req.kind, req.n = fileSegment, n
	return req, true
}

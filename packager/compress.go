package packager

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Playlists and manifests are sent gzip-compressed to clients that accept
// it. A low-latency player reloads its media playlists (video and audio)
// five times a second: uncompressed, those reloads take some 300 kbit/s,
// half of what a slow viewer has, and the media gets the rest. Compressed
// they take a sixth of that. A rendering is compressed once, when the first
// client that accepts gzip asks for it.

// gzipWriters recycles compressors (each holds a few hundred KiB of state).
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// gzipBytes returns b compressed with gzip.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/3 + 64)
	w := gzipWriters.Get().(*gzip.Writer)
	w.Reset(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	w.Reset(nil)
	gzipWriters.Put(w)
	return buf.Bytes()
}

// maxAcceptEncoding bounds the Accept-Encoding header the packager parses.
const maxAcceptEncoding = 512

// acceptsGzip reports whether the request's Accept-Encoding allows gzip
// (RFC 9110 §12.5.3: "gzip" or "*" with a non-zero weight, "gzip" taking
// precedence over "*").
func acceptsGzip(r *http.Request) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, h := range r.Header.Values("Accept-Encoding") {
		if len(h) > maxAcceptEncoding {
			return false
		}
		for item := range strings.SplitSeq(h, ",") {
			coding, params, _ := strings.Cut(item, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" && coding != "*" {
				continue
			}
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					if err != nil || f < 0 || f > 1 {
						f = 0
					}
					q = f
				}
			}
			if coding == "*" {
				starQ = max(starQ, q)
			} else {
				gzipQ = max(gzipQ, q)
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

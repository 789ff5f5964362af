package packager

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		header []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"gzip, deflate, br, zstd"}, true}, // Chromium
		{[]string{"br;q=1.0, gzip;q=0.8, *;q=0.1"}, true},
		{[]string{"identity"}, false},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip;q=0.000"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0.5, gzip;q=0"}, false}, // gzip named: its weight wins
		{[]string{"*;q=0"}, false},
		{[]string{"x-gzip"}, true},
		{[]string{"GZIP;Q=0.5"}, true},
		{[]string{"br", "gzip"}, true}, // several header lines
		{[]string{"gzip;q=bogus"}, false},
		{[]string{"gzip;q=2"}, false},
		{[]string{strings.Repeat("x", maxAcceptEncoding) + ",gzip"}, false},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		for _, h := range tc.header {
			r.Header.Add("Accept-Encoding", h)
		}
		if got := acceptsGzip(r); got != tc.want {
			t.Errorf("Accept-Encoding %q: %v, want %v", tc.header, got, tc.want)
		}
	}
}

// TestPlaylistsGzipped: playlists and manifests go out gzip-compressed to
// clients that accept it, with their own validator, and uncompressed to the
// others; media files are never compressed.
func TestPlaylistsGzipped(t *testing.T) {
	_, src, srv := testServer(t, Config{})
	sid, _ := startStream(t, src, srv.URL)
	// A transport that leaves Accept-Encoding and the body alone.
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	fetch := func(url, enc, inm string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	for _, u := range []string{"/hls/live/test/index.m3u8", "/hls/live/test/audio.m3u8", "/dash/live/test/manifest.mpd"} {
		u = srv.URL + u
		plain, pb := fetch(u, "", "")
		zipped, zb := fetch(u, "gzip, deflate, br", "")
		if plain.StatusCode != 200 || zipped.StatusCode != 200 {
			t.Fatalf("%s: %d, %d", u, plain.StatusCode, zipped.StatusCode)
		}
		if plain.Header.Get("Content-Encoding") != "" || zipped.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: Content-Encoding %q and %q", u, plain.Header.Get("Content-Encoding"), zipped.Header.Get("Content-Encoding"))
		}
		if !strings.HasPrefix(plain.Header.Get("Vary"), "Accept-Encoding") || plain.Header.Get("Vary") != zipped.Header.Get("Vary") {
			t.Fatalf("%s: no Vary", u)
		}
		if zipped.ContentLength != int64(len(zb)) || len(zb) >= len(pb) {
			t.Fatalf("%s: %d bytes gzipped (Content-Length %d), %d plain", u, len(zb), zipped.ContentLength, len(pb))
		}
		zr, err := gzip.NewReader(bytes.NewReader(zb))
		if err != nil {
			t.Fatal(err)
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(unzipped, pb) {
			t.Fatalf("%s: the gzipped body is not the plain one", u)
		}
		pe, ze := plain.Header.Get("ETag"), zipped.Header.Get("ETag")
		if pe == "" || ze == "" || pe == ze {
			t.Fatalf("%s: ETags %q and %q", u, pe, ze)
		}
		if r, _ := fetch(u, "gzip", ze); r.StatusCode != http.StatusNotModified {
			t.Fatalf("%s: revalidation of the gzipped body: %d", u, r.StatusCode)
		}
		if r, _ := fetch(u, "", ze); r.StatusCode != http.StatusOK {
			t.Fatalf("%s: the gzipped ETag validated the plain body: %d", u, r.StatusCode)
		}
	}
	r, _ := fetch(srv.URL+"/hls/live/test/"+sid+"_full_0.m4s", "gzip", "")
	if r.StatusCode != 200 || r.Header.Get("Content-Encoding") != "" {
		t.Fatalf("segment: %d, Content-Encoding %q", r.StatusCode, r.Header.Get("Content-Encoding"))
	}
}

func BenchmarkGzipPlaylist(b *testing.B) {
	body := bytes.Repeat([]byte("#EXT-X-PART:DURATION=0.20000,URI=\"0123abcd_full_41.3.m4s\"\n"), 60)
	b.ReportAllocs()
	for b.Loop() {
		gzipBytes(body)
	}
}

// FuzzAcceptsGzip checks properties of the Accept-Encoding reader on any
// header: the order of its entries does not matter (two halves swapped, or
// sent as two header lines, read the same), codings other than gzip and *
// change nothing, a gzip entry without weight is always honoured, and an
// explicit gzip;q=0 refuses unless another gzip entry allows it.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip, deflate, br, zstd", "br;q=1.0, gzip;q=0.8, *;q=0.1", "*;q=0", "gzip;q=", ";;,,;q=0.5",
		"x-gzip;q=0.001", "GZIP ; Q = 0", "*, gzip;q=0"} {
		f.Add(s)
	}
	accepts := func(values ...string) bool {
		r, _ := http.NewRequest("GET", "/", nil)
		for _, v := range values {
			r.Header.Add("Accept-Encoding", v)
		}
		return acceptsGzip(r)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if len(h) > maxAcceptEncoding/2-32 {
			return // the properties below join two copies; the bound refuses long headers on purpose
		}
		got := accepts(h)
		if a, b, ok := strings.Cut(h, ","); ok {
			if accepts(b+","+a) != got {
				t.Fatalf("%q: order of entries changes the answer", h)
			}
			if accepts(a, b) != got {
				t.Fatalf("%q: two header lines read differently from one", h)
			}
		}
		if accepts(h+", br;q=0.9, identity") != got {
			t.Fatalf("%q: unrelated codings change the answer", h)
		}
		if !accepts(h + ", gzip") {
			t.Fatalf("%q, gzip: refused", h)
		}
		if accepts(h+", gzip;q=0") && !got {
			t.Fatalf("%q: gzip;q=0 made it accept", h)
		}
	})
}

package httpfloor

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
)

func TestReferences(t *testing.T) {
	pl := "#EXTM3U\n#EXT-X-MAP:URI=\"s_init.mp4\"\n#EXTINF:2.0,\ns_1.m4s\n#EXT-X-PART:DURATION=0.2,URI=\"s_2.0.m4s\"\n#EXTINF:2.0,\r\ns_2.m4s\n"
	if got, want := References([]byte(pl)), []string{"s_init.mp4", "s_1.m4s", "s_2.m4s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("References = %q, want %q", got, want)
	}
}

// The mirror serves the upstream's playlist and files from memory, the
// playlist only once the files it names are in.
func TestMirror(t *testing.T) {
	files := map[string]string{
		"/hls/live/a/muxed.m3u8": "#EXTM3U\n#EXT-X-MAP:URI=\"a_init.mp4\"\n#EXTINF:2.0,\na_1.m4s\n",
		"/hls/live/a/a_init.mp4": "init", "/hls/live/a/a_1.m4s": "segment one",
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, b)
	}))
	defer up.Close()
	m, err := New(Config{Upstream: up.URL + "/hls/live/a/muxed.m3u8", Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = m.Run(ctx) }()
	srv := httptest.NewServer(m)
	defer srv.Close()
	get := func(p string) (int, string) {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, _ := get("/muxed.m3u8"); code == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for p, want := range map[string]string{"/muxed.m3u8": files["/hls/live/a/muxed.m3u8"], "/a_1.m4s": "segment one", "/a_init.mp4": "init"} {
		if code, body := get(p); code != http.StatusOK || body != want {
			t.Errorf("%s: %d %q, want %q", p, code, body, want)
		}
	}
	if code, _ := get("/a_9.m4s"); code != http.StatusNotFound {
		t.Errorf("a file not mirrored: %d", code)
	}
	if _, err := New(Config{Upstream: "rtmp://x/live/a"}); err == nil {
		t.Error("an RTMP upstream accepted")
	}
}

// References agrees with gohlslib's parser on every media playlist that
// parser accepts: the map's URI, then the segments'.
func FuzzReferences(f *testing.F) {
	f.Add([]byte("#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"i.mp4\"\n#EXTINF:2,\ns.m4s\n"))
	f.Add([]byte("#EXTM3U\r\n#EXT-X-TARGETDURATION:2\r\n#EXTINF:2,\r\na.ts\r\n#EXTINF:2,\r\nb.ts\r\n"))
	f.Fuzz(func(t *testing.T, pl []byte) {
		refs := References(pl)
		p, err := playlist.Unmarshal(pl)
		m, ok := p.(*playlist.Media)
		if err != nil || !ok {
			return
		}
		var want []string
		if m.Map != nil {
			want = append(want, m.Map.URI)
		}
		for _, s := range m.Segments {
			want = append(want, s.URI)
		}
		if !reflect.DeepEqual(refs, want) && !(len(refs) == 0 && len(want) == 0) {
			t.Fatalf("References(%q) = %q, gohlslib says %q", pl, refs, want)
		}
	})
}

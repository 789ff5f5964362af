package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRelay serves a steered multivariant playlist, a live media playlist
// whose segments advance every 500 ms, and the segments.
func fakeRelay(t *testing.T, id string, steer *string) *httptest.Server {
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/hls/live/drill/index.m3u8", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "#EXTM3U\n#EXT-X-CONTENT-STEERING:SERVER-URI=\"%s\",PATHWAY-ID=\"%s\"\n"+
			"#EXT-X-STREAM-INF:BANDWIDTH=300000,PATHWAY-ID=\"%s\",STABLE-VARIANT-ID=\"full\"\nfull.m3u8\n", *steer, id, id)
	})
	mux.HandleFunc("/hls/live/drill/full.m3u8", func(w http.ResponseWriter, _ *http.Request) {
		n := int(time.Since(start) / (500 * time.Millisecond))
		var b strings.Builder
		fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:%d\n", n)
		for i := n; i < n+4; i++ {
			fmt.Fprintf(&b, "#EXTINF:0.5,\nseg%d.ts\n", i)
		}
		fmt.Fprint(w, b.String())
	})
	mux.HandleFunc("/hls/live/drill/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ts") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestHLSViewerFollowsSteering: the viewer of relay a moves to relay b, the
// next pathway of the steering answer, as soon as a fails.
func TestHLSViewerFollowsSteering(t *testing.T) {
	var steerURL string
	a, b := fakeRelay(t, "relay-a", &steerURL), fakeRelay(t, "relay-b", &steerURL)
	var asked atomic.Int64
	steer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Query().Get("_HLS_pathway") == "" {
			t.Errorf("steering request without _HLS_pathway: %s", r.URL)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"VERSION": 1, "TTL": 5,
			"PATHWAY-PRIORITY": []string{"relay-a", "relay-b"},
			"PATHWAY-CLONES": []map[string]any{{"BASE-ID": "relay-a", "ID": "relay-b",
				"URI-REPLACEMENT": map[string]any{"HOST": "127.0.0.1",
					"PER-VARIANT-URIS": map[string]string{"full": b.URL + "/hls/live/drill/full.m3u8"}}}}})
	}))
	defer steer.Close()
	steerURL = steer.URL + "/steer/hls/live/drill?base=relay-a"
	v := &HLSViewer{URL: a.URL + "/hls/live/drill/index.m3u8"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); v.Run(ctx) }()
	time.Sleep(2500 * time.Millisecond)
	killed := time.Now()
	a.CloseClientConnections()
	a.Close()
	time.Sleep(4 * time.Second)
	now := time.Now()
	cancel()
	<-done
	_, segs, stall := v.Stats(killed, killed, now)
	if p := v.Pathways(); len(p) != 2 || p[0] != "relay-a" || p[1] != "relay-b" {
		t.Errorf("pathways played %v, want relay-a then relay-b", p)
	}
	if segs == 0 || stall > 2500*time.Millisecond {
		t.Errorf("%d segments, longest wait after the kill %v: want segments from b within a playlist reload", segs, stall)
	}
	if asked.Load() < 2 {
		t.Errorf("steering server asked %d times: want once at the start and once on the failure", asked.Load())
	}
}

func TestHLSAttrs(t *testing.T) {
	a := attrs(`SERVER-URI="http://x/steer?a=1,b=2",PATHWAY-ID="relay-eu",BANDWIDTH=3`)
	if a["SERVER-URI"] != "http://x/steer?a=1,b=2" || a["PATHWAY-ID"] != "relay-eu" || a["BANDWIDTH"] != "3" {
		t.Fatalf("attrs = %v", a)
	}
}

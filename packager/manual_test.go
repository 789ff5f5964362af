package packager

import (
	"net/http"
	"os"
	"testing"
	"time"
)

// TestManualServe serves a looped test stream for manual checks:
// PACKAGER_MANUAL=127.0.0.1:8089 go test -run TestManualServe ./packager/
// (PACKAGER_MANUAL_LLDASH=1 for low-latency DASH manifests).
func TestManualServe(t *testing.T) {
	addr := os.Getenv("PACKAGER_MANUAL")
	if addr == "" {
		t.Skip("set PACKAGER_MANUAL=host:port to serve a test stream")
	}
	src := &fakeSource{}
	src.add("live", "test", &clip{frames: encode(t, 8, "-bf", "3"), burst: 4500 * time.Millisecond, speed: 1})
	src.add("live", "nob", &clip{frames: encode(t, 8, "-bf", "0"), burst: 4500 * time.Millisecond, speed: 1})
	p, err := New(src, Config{Apps: map[string]AppConfig{"ts": {HLS: HLSMPEGTS}}, Default: AppConfig{LowLatencyDASH: os.Getenv("PACKAGER_MANUAL_LLDASH") != ""}})
	if err != nil {
		t.Fatal(err)
	}
	src.add("ts", "test", &clip{frames: encode(t, 8, "-bf", "3"), burst: 4500 * time.Millisecond, speed: 1})
	defer p.Close()
	srv := &http.Server{Addr: addr, Handler: p.Handler()}
	go func() { time.Sleep(10 * time.Minute); srv.Close() }()
	t.Log(srv.ListenAndServe())
}

package httpswarm

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/packager"
)

func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Ramp+cfg.Duration+20*time.Second)
	defer cancel()
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		pc := r.PerClient
		r.PerClient = nil
		b, _ := json.MarshalIndent(r, "", "  ")
		t.Logf("%s", b)
		r.PerClient = pc
	}
	return r
}

func TestLowLatencyHLS(t *testing.T) {
	srv := testServer(t, packager.Config{}, synthStream{gop: time.Second, kbps: 2000, burst: 4 * time.Second})
	r := run(t, Config{URL: srv.URL + "/hls/live/test/index.m3u8", Clients: 4, Ramp: 500 * time.Millisecond,
		Duration: 8 * time.Second, Throttled: 1, ThrottleKbps: 600, PIDs: []int{os.Getpid()}})
	if r.All.Started != 4 {
		t.Fatalf("%d of 4 clients started playing", r.All.Started)
	}
	if r.Requests[reqPart] == 0 || r.Requests[reqBlocking] == 0 || r.Requests[reqInit] == 0 {
		t.Errorf("requests %v: want parts, blocking reloads and init segments", r.Requests)
	}
	if len(r.Errors) != 0 {
		t.Errorf("errors %v %q", r.Errors, r.ErrorSamples)
	}
	for _, c := range r.PerClient {
		if c.MediaS["audio"] == 0 {
			t.Errorf("client %d fetched no audio: %v", c.ID, c.MediaS)
		}
		// 600 kbit/s cannot carry full (about 1.5 Mbit/s): the throttled
		// client moves down; the others have loopback speed and stay.
		if c.Throttled && (c.SwitchesDown == 0 || c.Rendition == "full") {
			t.Errorf("throttled client %d: %d moves down, ended on %s (estimate %.0f kbit/s)", c.ID, c.SwitchesDown, c.Rendition, c.EstimateKbps)
		}
		if !c.Throttled && c.Rendition != "full" {
			t.Errorf("client %d ended on %s (estimate %.0f kbit/s)", c.ID, c.Rendition, c.EstimateKbps)
		}
	}
	if r.All.LiveLagS.N != 4 {
		t.Errorf("live lag of %d clients, want 4", r.All.LiveLagS.N)
	}
	if r.Server == nil || r.Server.CPUSeconds <= 0 {
		t.Errorf("server %+v", r.Server)
	}
}

func TestPlainHLS(t *testing.T) {
	srv := testServer(t, packager.Config{}, synthStream{gop: time.Second, kbps: 1500, burst: 4 * time.Second})
	r := run(t, Config{URL: srv.URL + "/hls/live/test/index.m3u8", Clients: 2, Duration: 5 * time.Second,
		LowLatency: LLOff, Reload: 500 * time.Millisecond, Rendition: "top"})
	if r.All.Started != 2 || len(r.Errors) != 0 {
		t.Fatalf("started %d, errors %v %q", r.All.Started, r.Errors, r.ErrorSamples)
	}
	if r.Requests[reqPart] != 0 || r.Requests[reqBlocking] != 0 || r.Requests[reqSegment] == 0 {
		t.Errorf("requests %v: a plain player fetches whole segments and polls", r.Requests)
	}
	// 5 s of polling every 0.5 s: about 10 loads of each of two playlists.
	if n := r.Requests[reqPlaylist]; n < 2*2*6 || n > 2*(2*12+1) {
		t.Errorf("%d playlist loads by 2 clients in 5 s at 0.5 s", n)
	}
	for _, c := range r.PerClient {
		if c.Rendition != "full" || c.MediaS["lite"] != 0 {
			t.Errorf("client %d on %q (%v), want full only", c.ID, c.Rendition, c.MediaS)
		}
		if c.Stalls != 0 {
			t.Errorf("client %d stalled %d times on loopback", c.ID, c.Stalls)
		}
	}
}

func TestDASH(t *testing.T) {
	srv := testServer(t, packager.Config{}, synthStream{gop: time.Second, kbps: 2000, burst: 4 * time.Second})
	r := run(t, Config{URL: srv.URL + "/dash/live/test/manifest.mpd", Clients: 3, Duration: 6 * time.Second,
		Throttled: 1, ThrottleKbps: 500})
	if r.Proto != DASH || r.All.Started != 3 || len(r.Errors) != 0 {
		t.Fatalf("%s: started %d, errors %v %q", r.Proto, r.All.Started, r.Errors, r.ErrorSamples)
	}
	if r.Requests[reqSegment] == 0 || r.Requests[reqInit] < 6 {
		t.Errorf("requests %v", r.Requests)
	}
	for _, c := range r.PerClient {
		if c.MediaS["audio"] == 0 {
			t.Errorf("client %d fetched no audio: %v", c.ID, c.MediaS)
		}
		if c.Throttled && c.Rendition == "full" {
			t.Errorf("throttled client %d ended on full (%v, estimate %.0f kbit/s)", c.ID, c.MediaS, c.EstimateKbps)
		}
	}
}

// TestMPEGTS: a ladder with the audio muxed into every rendition (the
// packager's MPEG-TS flavour) is played on one track.
func TestMPEGTS(t *testing.T) {
	srv := testServer(t, packager.Config{Apps: map[string]packager.AppConfig{"stb": {HLS: packager.HLSMPEGTS}}},
		synthStream{gop: time.Second, kbps: 1000, burst: 4 * time.Second})
	r := run(t, Config{URL: srv.URL + "/hls/stb/test/index.m3u8", Clients: 2, Duration: 4 * time.Second})
	if r.All.Started != 2 || len(r.Errors) != 0 || r.Requests[reqSegment] == 0 || r.Requests[reqInit] != 0 {
		t.Fatalf("started %d, requests %v, errors %v %q", r.All.Started, r.Requests, r.Errors, r.ErrorSamples)
	}
	for _, c := range r.PerClient {
		if c.MediaS["audio"] != 0 {
			t.Errorf("client %d fetched a separate audio rendition: %v", c.ID, c.MediaS)
		}
	}
}

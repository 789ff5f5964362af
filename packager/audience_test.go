package packager

import (
	"testing"
	"time"
)

func TestAudienceByProtocol(t *testing.T) {
	p, src, srv := testServer(t, Config{})
	startStream(t, src, srv.URL)
	c := srv.Client()
	for _, q := range []string{"?session=a", "?session=b", "?session=a"} {
		get(t, c, srv.URL+"/hls/live/test/index.m3u8"+q)
	}
	get(t, c, srv.URL+"/dash/live/test/manifest.mpd?session=c")
	now := time.Now()
	a := p.audienceAt(now)
	if len(a) != 1 || a[0].App != "live" || a[0].Name != "test" {
		t.Fatalf("audience %+v", a)
	}
	// sessions a and b, and the address of startStream's plain requests.
	if a[0].HLS.Viewers != 3 || a[0].DASH.Viewers != 1 {
		t.Fatalf("audience %+v, want 3 HLS and 1 DASH viewers", a[0])
	}
	// A second later the rate of what was served since the first read shows.
	get(t, c, srv.URL+"/dash/live/test/manifest.mpd?session=c")
	now = now.Add(time.Second)
	if a := p.audienceAt(now); a[0].DASH.Mbps <= 0 || a[0].HLS.Mbps != 0 {
		t.Fatalf("rates %+v, want DASH only", a[0])
	}
	// The rate is over the last 10 s: a burst a second in, nothing for the
	// next second, still shows.
	now = now.Add(time.Second)
	if a := p.audienceAt(now); a[0].DASH.Mbps <= 0 {
		t.Fatalf("rates %+v: the DASH burst a second ago is gone", a[0])
	}
	// Past the window nobody is left.
	now = now.Add(p.cfg.AudienceWindow + time.Second)
	if a := p.audienceAt(now); a[0].HLS.Viewers != 0 || a[0].DASH.Viewers != 0 {
		t.Fatalf("audience after the window %+v", a[0])
	}
}

// TestAudienceRateWindow: bytes that come in bursts every 2 s (a segment
// each) read as a steady rate, over the last 10 s.
func TestAudienceRateWindow(t *testing.T) {
	a := newAudience(6*time.Second, 10)
	t0 := time.Now()
	var last [numProtos]ProtocolAudience
	for s := 0; s <= 20; s++ {
		if s%2 == 0 {
			a.served(protoHLS, 250_000) // 2 Mbit every 2 s: 1 Mbit/s
		}
		last = a.read(t0.Add(time.Duration(s) * time.Second))
		if s >= 10 && (last[protoHLS].Mbps < 0.75 || last[protoHLS].Mbps > 1.25) {
			t.Fatalf("at %d s: %.2f Mbit/s, want about 1", s, last[protoHLS].Mbps)
		}
	}
	// Nothing more served: the rate falls to 0 within the window.
	for s := 21; s <= 32; s++ {
		last = a.read(t0.Add(time.Duration(s) * time.Second))
	}
	if last[protoHLS].Mbps != 0 {
		t.Errorf("%.2f Mbit/s 12 s after the last byte", last[protoHLS].Mbps)
	}
}

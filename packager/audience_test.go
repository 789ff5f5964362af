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
	// Past the window nobody is left.
	now = now.Add(p.cfg.AudienceWindow + time.Second)
	if a := p.audienceAt(now); a[0].HLS.Viewers != 0 || a[0].DASH.Viewers != 0 {
		t.Fatalf("audience after the window %+v", a[0])
	}
}

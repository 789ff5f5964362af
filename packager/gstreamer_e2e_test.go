package packager

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/gstplay"
)

// gstPlayed runs gst-launch-1.0 playbin3 on url for at most d and returns
// the span of video timestamps the sink received.
func gstPlayed(t *testing.T, url string, d time.Duration) time.Duration {
	t.Helper()
	return gstRun(t, url, d, false)
}

// gstRun is gstPlayed, or with legacy playbin with GStreamer's newer
// adaptive demuxers ranked out, so that it takes the legacy hlsdemux and
// dashdemux.
func gstRun(t *testing.T, url string, d time.Duration, legacy bool) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	span, tail := gstplay.Play(ctx, url, legacy, 0)
	if span == 0 {
		t.Logf("gst-launch-1.0 %s: no video buffer reached the sink; output ends:\n%s", url, tail)
	}
	return span
}

// TestGStreamerPlays: GStreamer's playbin3 (hlsdemux2, dashdemux2) plays
// the low-latency HLS ladder and the live DASH manifest of a stream older
// than the manifest's window (the case where a SegmentTimeline led
// dashdemux2 to a segment far ahead of the live edge: manifest.mpd answers
// GStreamer with the $Number$ manifest, see number.go).
func TestGStreamerPlays(t *testing.T) {
	if testing.Short() {
		t.Skip("plays for a minute")
	}
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gst-launch-1.0 is required on CI: %v", err)
		}
		t.Skip("gst-launch-1.0 not installed")
	}
	srv := playersServer(t, AppConfig{})
	base := srv.URL + "/hls/live/b/index.m3u8"
	if d := gstPlayed(t, base, 20*time.Second); d < 3*time.Second {
		t.Errorf("HLS: GStreamer played %v, want ≥ 3 s", d)
	} else {
		t.Logf("HLS: GStreamer played %v", d)
	}
	// Past the window: the first listed segment no longer starts at 0.
	for deadline := time.Now().Add(40 * time.Second); ; {
		resp, body := get(t, srv.Client(), srv.URL+"/dash/live/b/manifest.mpd")
		resp.Body.Close()
		if !strings.Contains(string(body), `<S t="0"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if d := gstPlayed(t, srv.URL+"/dash/live/b/manifest.mpd", 40*time.Second); d < 3*time.Second {
		t.Errorf("DASH: GStreamer played %v, want ≥ 3 s", d)
	} else {
		t.Logf("DASH: GStreamer played %v", d)
	}
}

// TestLegacyHLSDemuxPlaysTS: GStreamer's legacy hlsdemux (playbin with
// hlsdemux2 ranked out) plays ts.m3u8 (tsplay.go) of a stream whose media
// times are ten minutes in, at once. On the fMP4 ladder it waits for about
// the media time of the first listed segment before its first frame
// (docs/hls-dash.md, GStreamer): ten minutes here.
func TestLegacyHLSDemuxPlaysTS(t *testing.T) {
	if testing.Short() {
		t.Skip("plays for 20 s")
	}
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gst-launch-1.0 is required on CI: %v", err)
		}
		t.Skip("gst-launch-1.0 not installed")
	}
	const age = 10 * time.Minute
	src := &fakeSource{}
	src.add("live", "old", &clip{frames: encode(t, 8, "-bf", "3"), burst: 4500 * time.Millisecond, speed: 1, base: age})
	p, err := New(src, Config{Logger: discardLogger(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer p.Close()
	defer srv.Close()
	// Four segments listed, as the players test waits for (a window of one
	// or two is a GStreamer trouble of its own).
	waitUntil(t, "four segments", func() bool {
		_, b := get(t, srv.Client(), srv.URL+"/hls/live/old/ts_full.m3u8")
		return strings.Count(string(b), "#EXTINF") >= 4
	})
	if d := gstRun(t, srv.URL+"/hls/live/old/ts.m3u8", 20*time.Second, true); d < 3*time.Second {
		t.Errorf("the legacy hlsdemux played %v of ts.m3u8, want ≥ 3 s", d)
	} else {
		t.Logf("the legacy hlsdemux played %v of ts.m3u8 in 20 s", d)
	}
}

package main

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHLSAndDASHOnRelay: ffmpeg publishes to the primary; a relay that has
// never seen the stream serves it as HLS (every rendition) and DASH on its
// first HTTP request, and each decodes without error.
func TestHLSAndDASHOnRelay(t *testing.T) {
	requireTool(t, "ffmpeg", "ffprobe")
	m := startMesh(t, 1)
	startPublisher(t, m.publishURL(), 60*time.Second, 1500)
	waitLive(t, m.primary, "live", "cam")
	base := "http://" + m.r1.http
	master := base + "/hls/live/cam/index.m3u8"
	waitFor(t, "the multivariant playlist", 20*time.Second, func() bool {
		resp, err := http.Get(master)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	time.Sleep(3 * time.Second) // a few segments
	urls := []string{master, base + "/dash/live/cam/manifest.mpd"}
	for _, v := range []string{"full", "lite", "key", "audio"} {
		urls = append(urls, base+"/hls/live/cam/"+v+".m3u8")
	}
	for _, u := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// A keyframes-only rendition has 0.5 frames a second: do not let the
		// players wait for 20 frames to estimate a frame rate, and start HLS
		// at the oldest segment listed rather than at the live edge.
		in := []string{"-rw_timeout", "10000000", "-fpsprobesize", "0"}
		if strings.Contains(u, "/hls/") {
			in = append(in, "-live_start_index", "0")
		}
		in = append(in, "-i", u)
		out, err := exec.CommandContext(ctx, "ffprobe", append([]string{"-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0"}, in...)...).CombinedOutput()
		if err != nil || (!strings.Contains(string(out), "h264") && !strings.Contains(string(out), "aac")) {
			t.Errorf("ffprobe %s: %v\n%s", u, err, out)
			continue
		}
		var stderr bytes.Buffer
		dec := exec.CommandContext(ctx, "ffmpeg", append(append([]string{"-hide_banner", "-v", "error"}, in...), "-t", "3", "-f", "null", "-")...)
		dec.Stderr = &stderr
		if err := dec.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("decode %s: %v\n%s", u, err, stderr.String())
		}
	}
}

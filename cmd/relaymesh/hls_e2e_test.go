package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHLSAndDASHOnRelay: ffmpeg publishes to the primary; a relay that has
// never seen the stream serves it as HLS (every rendition) and DASH on its
// first HTTP request, and each decodes without error.
func TestHLSAndDASHOnRelay(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg", "ffprobe")
	m := startMesh(t, 1)
	startPublisher(t, m.publishURL(), 60*time.Second, 1500)
	waitLive(t, m.primary, "live", "cam")
	base := "http://" + m.r1.http
	master := base + "/hls/live/cam/index.m3u8"
	waitOK(t, "the multivariant playlist", master, 20*time.Second)
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

// TestHLSCodecChangeOnRelay: the broadcaster stops and comes back at another
// picture size and profile. The relay's playlists keep the first session's
// segments and list the second's after EXT-X-DISCONTINUITY with their own
// init segment; the multivariant playlist then describes the new session;
// each session decodes at its own size.
func TestHLSCodecChangeOnRelay(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg", "ffprobe")
	m := startMesh(t, 1)
	publish := func(size, profile string, seconds int) *exec.Cmd {
		cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
			"-f", "lavfi", "-i", "testsrc2=size="+size+":rate=25",
			"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
			"-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-profile:v", profile, "-pix_fmt", "yuv420p",
			"-g", "50", "-b:v", "800k", "-c:a", "aac", "-b:a", "64k",
			"-t", strconv.Itoa(seconds), "-f", "flv", m.publishURL())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	first := publish("640x360", "high", 6)
	waitLive(t, m.primary, "live", "cam")
	base := "http://" + m.r1.http + "/hls/live/cam/"
	playlist := func(name string) string {
		resp, err := http.Get(base + name)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return ""
		}
		return string(b)
	}
	waitFor(t, "the relay's playlist", 20*time.Second, func() bool { return playlist("full.m3u8") != "" })
	_ = first.Wait()
	publish("320x240", "baseline", 10)

	// full.m3u8 of both sessions: [init, segments…] per session.
	var sessions [][]string
	waitFor(t, "the second session's segments behind a discontinuity", 30*time.Second, func() bool {
		pl := playlist("full.m3u8")
		sessions = sessions[:0]
		for line := range strings.SplitSeq(pl, "\n") {
			switch {
			case strings.HasPrefix(line, "#EXT-X-MAP:URI="):
				sessions = append(sessions, []string{strings.Trim(strings.TrimPrefix(line, "#EXT-X-MAP:URI="), `"`)})
			case strings.HasSuffix(line, ".m4s") && !strings.HasPrefix(line, "#") && len(sessions) > 0:
				sessions[len(sessions)-1] = append(sessions[len(sessions)-1], line)
			}
		}
		return strings.Contains(pl, "#EXT-X-DISCONTINUITY\n") && len(sessions) == 2 && len(sessions[0]) > 1 && len(sessions[1]) > 2
	})
	if mv := playlist("index.m3u8"); !strings.Contains(mv, "RESOLUTION=320x240") || !strings.Contains(mv, "avc1.42c0") {
		t.Errorf("the multivariant playlist does not describe the new session:\n%s", mv)
	}
	for k, files := range sessions {
		var data []byte
		for _, f := range files {
			resp, err := http.Get(base + f)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", f, resp.StatusCode)
			}
			data = append(data, b...)
		}
		path := filepath.Join(t.TempDir(), "session.mp4")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height", "-of", "csv=p=0", path).CombinedOutput()
		if want := []string{"640,360", "320,240"}[k]; err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("session %d: ffprobe %v: %q, want %s", k, err, out, want)
		}
		var stderr bytes.Buffer
		dec := exec.Command("ffmpeg", "-hide_banner", "-v", "error", "-i", path, "-f", "null", "-")
		dec.Stderr = &stderr
		if err := dec.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("session %d decodes with errors: %v\n%s", k, err, stderr.String())
		}
	}
}

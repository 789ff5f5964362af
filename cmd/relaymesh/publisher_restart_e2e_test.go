package main

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// publishSized publishes a test pattern of the given size (25 fps, a
// keyframe a second) to url for d, as a broadcaster's encoder would.
func publishSized(t *testing.T, url, size string, d time.Duration) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size="+size+":rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
		"-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
		"-g", "25", "-b:v", "500k", "-c:a", "aac", "-b:a", "64k",
		"-t", strconv.Itoa(int(d.Seconds())), "-f", "flv", url)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// showinfoSize matches the picture size in a line of ffmpeg's showinfo
// filter.
var showinfoSize = regexp.MustCompile(`Parsed_showinfo.* s:(\d+x\d+) `)

// TestFFmpegThroughPlayFollowsAPublisherRestart: ffmpeg asks the
// redirector for HLS without a format and plays on across the publisher's
// reconnection with another picture size: the redirector sends it to the
// MPEG-TS playlist (its fMP4 demuxer keeps the first init segment and
// decodes the new pictures with the old parameter sets; VLC stops at
// the new init segment: topology/redirector/formats.go), where the
// parameter sets travel with the pictures.
func TestFFmpegThroughPlayFollowsAPublisherRestart(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	m := startTestMesh(t)
	ctl := m.startControl(ctx, "orch")
	c := ctl.web
	mv := c.waitRelaysUp(4)
	const stream = "live/restart"
	first := publishSized(t, "rtmp://"+m.primary+"/"+stream, "640x360", 14*time.Second)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)

	var out strings.Builder
	player := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "info", "-rw_timeout", "10000000",
		"-i", c.web+"/play/"+stream+"?proto=hls&ip="+ipDE, "-map", "0:v:0", "-vf", "showinfo", "-t", "22", "-f", "null", "-")
	player.Stderr = &out
	if err := player.Start(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait() // the broadcaster's encoder stops, and comes back with another size
	publishSized(t, "rtmp://"+m.primary+"/"+stream, "320x180", 40*time.Second)
	err := player.Wait()
	sizes := map[string]int{}
	for _, m := range showinfoSize.FindAllStringSubmatch(out.String(), -1) {
		sizes[m[1]]++
	}
	decodeErrors := strings.Count(out.String(), "error while decoding") + strings.Count(out.String(), "corrupt decoded frame")
	t.Logf("pictures by size %v, decoding errors %d", sizes, decodeErrors)
	if err != nil || sizes["640x360"] < 25 || sizes["320x180"] < 50 || decodeErrors > 3 {
		tail := out.String()
		if len(tail) > 3000 {
			tail = tail[len(tail)-3000:]
		}
		t.Fatalf("ffmpeg through /play across a publisher restart: %v; pictures by size %v (want ≥ 25 before, ≥ 50 after), %d decoding errors (want ≤ 3)\n%s",
			err, sizes, decodeErrors, tail)
	}
}

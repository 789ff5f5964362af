package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gstBufferPTS matches the buffer timestamps fakesink reports with -v.
var gstBufferPTS = regexp.MustCompile(`pts: (\d+):(\d\d):(\d\d)\.(\d{9})`)

// gstPlays runs gst-launch-1.0 playbin3 on url for at most d and returns
// the span of video timestamps its sink received. legacy runs playbin
// instead with GStreamer's newer adaptive demuxers (hlsdemux2, dashdemux2)
// ranked out, so that it takes the legacy ones (hlsdemux, dashdemux; they
// are not streams-aware, which playbin3 needs).
func gstPlays(t *testing.T, url string, legacy bool, d time.Duration) (time.Duration, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	bin := "playbin3"
	if legacy {
		bin = "playbin"
	}
	cmd := exec.CommandContext(ctx, "gst-launch-1.0", "-v", bin, "uri="+url,
		"video-sink=fakesink sync=true silent=false", "audio-sink=fakesink sync=true")
	if legacy {
		cmd.Env = append(os.Environ(), "GST_PLUGIN_FEATURE_RANK=hlsdemux2:NONE,dashdemux2:NONE")
	}
	out, _ := cmd.CombinedOutput() // ended by the timeout
	var lo, hi time.Duration
	n := 0
	for _, m := range gstBufferPTS.FindAllStringSubmatch(string(out), -1) {
		var v [4]int
		for i := range v {
			v[i], _ = strconv.Atoi(m[i+1])
		}
		ts := time.Duration(v[0])*time.Hour + time.Duration(v[1])*time.Minute + time.Duration(v[2])*time.Second + time.Duration(v[3])
		if n == 0 || ts < lo {
			lo = ts
		}
		hi = max(hi, ts)
		n++
	}
	tail := string(out)
	if len(tail) > 1500 {
		tail = tail[len(tail)-1500:]
	}
	if n == 0 {
		return 0, tail
	}
	return hi - lo, tail
}

// TestPlayersDirectAndThroughPlay: ffmpeg, GStreamer's playbin3 (with
// hlsdemux2 and dashdemux2) and GStreamer's legacy demuxers (hlsdemux,
// dashdemux) each play HLS and DASH both from a relay and through the
// redirector's /play (a 302 to the relay). hls.js and dash.js are in
// TestBrowserPlayers (from a relay) and TestSteeringFailover (through
// /play, from a page of another origin).
//
// Two cases do not play (docs/hls-dash.md, *Players*) and are skipped,
// named as broken, unless RELAYMESH_PLAYERS_ALL=1 asks for them: the legacy
// hlsdemux on the relay's HLS (1.6 s of video, then nothing, no error), and
// playbin3 on DASH through /play (it buffers for the whole 100 s and shows
// no frame in two runs out of two; from the relay it plays).
func TestPlayersDirectAndThroughPlay(t *testing.T) {
	requireTool(t, "ffmpeg", "gst-launch-1.0")
	if testing.Short() {
		t.Skip("plays for a few minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 560*time.Second)
	defer cancel()
	m := startTestMesh(t)
	ctl := m.startScaleControl(ctx, "orch")
	waitFor(t, "the orchestrator leads", 10*time.Second, ctl.o.Leader)
	c := ctl.web
	mv := c.waitRelaysUp(4)
	const stream = "live/players"
	startPublisher(t, "rtmp://"+m.primary+"/"+stream, 540*time.Second, 800)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)
	mv = c.buildDemand(stream, []string{ipUS}, "relay-na")
	var relayURL string
	for _, r := range mv.Relays {
		if r.ID == "relay-na" {
			relayURL = r.HTTPURL
		}
	}
	sources := []struct{ name, url string }{
		{"hls from the relay", relayURL + "/hls/" + stream + "/index.m3u8"},
		{"dash from the relay", relayURL + "/dash/" + stream + "/manifest.mpd"},
		{"hls through /play", c.web + "/play/" + stream + "?proto=hls&ip=" + ipUS},
		{"dash through /play", c.web + "/play/" + stream + "?proto=dash&ip=" + ipUS},
	}
	time.Sleep(4 * time.Second) // a few segments
	for _, s := range sources {
		t.Run("ffmpeg "+s.name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			cmd := exec.CommandContext(cctx, "ffmpeg", "-hide_banner", "-v", "error", "-rw_timeout", "10000000",
				"-i", s.url, "-map", "0:v:0", "-map", "0:a:0", "-t", "3", "-f", "null", "-")
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Errorf("ffmpeg %s: %v\n%s", s.url, err, stderr.String())
			}
		})
		for _, legacy := range []bool{false, true} {
			name := "gstreamer playbin3 "
			if legacy {
				name = "gstreamer legacy demuxers "
			}
			t.Run(name+s.name, func(t *testing.T) {
				if os.Getenv("RELAYMESH_PLAYERS_ALL") == "" {
					switch {
					case legacy && strings.HasPrefix(s.name, "hls"):
						t.Skip("BROKEN: the legacy hlsdemux plays 1.6 s of the relay's HLS and stops (docs/hls-dash.md, Players); RELAYMESH_PLAYERS_ALL=1 runs it")
					case !legacy && s.name == "dash through /play":
						t.Skip("BROKEN: playbin3 buffers DASH through /play for 100 s and shows no frame (docs/hls-dash.md, Players); RELAYMESH_PLAYERS_ALL=1 runs it")
					}
				}
				// DASH: GStreamer starts suggestedPresentationDelay back;
				// playbin3 buffers 30 s before it plays (docs/hls-dash.md,
				// GStreamer), here 30-75 s in.
				limit := 20 * time.Second
				switch {
				case strings.HasPrefix(s.name, "dash") && !legacy:
					limit = 100 * time.Second
				case strings.HasPrefix(s.name, "dash"):
					limit = 45 * time.Second
				}
				d, tail := gstPlays(t, s.url, legacy, limit)
				if d < 3*time.Second {
					t.Errorf("GStreamer played %v of %s, want ≥ 3 s; output ends:\n%s", d, s.url, tail)
				} else {
					t.Logf("GStreamer played %v", d)
				}
			})
		}
	}
}

package packager

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/internal/av"
)

// badLine matches the warnings and errors of ffmpeg that mean broken
// output: decode errors, corrupt packets, timestamps going backwards, HTTP
// errors.
var badLine = regexp.MustCompile(`(?i)error|corrupt|non.monoton|discontinuit|invalid`)

// runTool runs ffmpeg or ffprobe (bounded) and reports any error line; it
// returns stdout. It is safe to call from several goroutines.
func runTool(t *testing.T, name string, args ...string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	ok := true
	for _, line := range strings.Split(stderr.String(), "\n") {
		if badLine.MatchString(line) {
			t.Errorf("%s %s: %s", name, strings.Join(args, " "), line)
			ok = false
		}
	}
	if err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		ok = false
	}
	return stdout.String(), ok
}

// decode reads 3 s of the given input with ffmpeg (extra args select streams).
func decode(t *testing.T, url string, maps ...string) {
	args := []string{"-hide_banner", "-v", "warning", "-i", url}
	args = append(args, maps...)
	args = append(args, "-t", "3", "-f", "null", "-")
	runTool(t, "ffmpeg", args...)
}

// checkSync checks that the audio and video of an input start together (as
// in the source: the first picture is shown at its composition offset, 80 ms
// with B-frames) and that both kinds are there.
func checkSync(t *testing.T, url string, wantVideo bool) {
	out, ok := runTool(t, "ffprobe", "-v", "warning", "-show_entries", "stream=codec_type,start_time", "-of", "csv=p=0", url)
	if !ok {
		return
	}
	var v, a []float64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		kind, start, ok := strings.Cut(line, ",")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(strings.Split(start, ",")[0]), 64)
		if err != nil {
			continue
		}
		switch kind {
		case "video":
			v = append(v, x)
		case "audio":
			a = append(a, x)
		}
	}
	if len(a) == 0 || (wantVideo && len(v) == 0) {
		t.Errorf("%s: streams %q", url, out)
		return
	}
	for _, vs := range v {
		for _, as := range a {
			if d := vs - as; d < -0.15 || d > 0.2 {
				t.Errorf("%s: video starts at %.3f s, audio at %.3f s", url, vs, as)
				return
			}
		}
	}
}

// TestEndToEnd packages real encoder output and checks with ffprobe and
// ffmpeg that every HLS variant, every MPEG-TS playlist (ts.m3u8 and an
// app configured mpegts) and every DASH
// representation decodes without error, with audio and video in sync.
func TestEndToEnd(t *testing.T) {
	withB := encode(t, 8, "-bf", "3")
	noB := encode(t, 8, "-bf", "0")
	src := &fakeSource{}
	// A publisher 6.5 s ahead (three complete segments at once), then real time.
	src.add("live", "b", &clip{frames: withB, burst: 6500 * time.Millisecond, speed: 1})
	src.add("live", "nob", &clip{frames: noB, burst: 6500 * time.Millisecond, speed: 1})
	src.add("stb", "b", &clip{frames: withB, burst: 6500 * time.Millisecond, speed: 1})
	p, err := New(src, Config{
		Logger:     discardLogger(),
		Registerer: prometheus.NewRegistry(),
		Apps:       map[string]AppConfig{"stb": {HLS: HLSMPEGTS}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer p.Close()
	defer srv.Close()
	base := srv.URL

	// The checks mostly wait on the network and the live edge: run them
	// together, a few at a time, whatever -parallel says.
	var checks []func()
	for _, stream := range []string{"b", "nob"} {
		index := base + "/hls/live/" + stream + "/index.m3u8"
		progs := 4 // full, lite, key, audio
		if stream == "nob" {
			// Without disposable frames lite is left out of the HLS ladder;
			// its playlist is still served.
			progs = 3
			lite := base + "/hls/live/nob/lite.m3u8"
			checks = append(checks, func() { decode(t, lite) })
		}
		for prog := range progs {
			checks = append(checks, func() { decode(t, index, "-map", fmt.Sprintf("0:p:%d", prog)) })
		}
		checks = append(checks, func() { checkSync(t, index, true) })
		// The muxed playlist: video and audio in the same segments.
		muxed := base + "/hls/live/" + stream + "/muxed.m3u8"
		checks = append(checks, func() { decode(t, muxed, "-map", "0:v:0", "-map", "0:a:0") }, func() { checkSync(t, muxed, true) })
		// The MPEG-TS playlist, made from the fMP4 segments (tsplay.go).
		ts := base + "/hls/live/" + stream + "/ts.m3u8"
		checks = append(checks, func() { decode(t, ts, "-map", "0:v:0", "-map", "0:a:0") }, func() { checkSync(t, ts, true) })
		mpd := base + "/dash/live/" + stream + "/manifest.mpd"
		for i := range 3 { // full, lite, key with the audio
			checks = append(checks, func() { decode(t, mpd, "-map", fmt.Sprintf("0:v:%d", i), "-map", "0:a:0") })
		}
		checks = append(checks, func() { checkSync(t, mpd, true) })
	}
	for _, name := range []string{"full", "lite", "key", "audio"} {
		u := base + "/hls/stb/b/" + name + ".m3u8"
		checks = append(checks, func() { decode(t, u) }, func() { checkSync(t, u, name != "audio") })
	}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, c := range checks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c()
		}()
	}
	wg.Wait()
}

// TestEndToEndCodecChange: the publisher comes back with another picture
// size and profile. The playlists keep the first session's segments, then
// the second's after a discontinuity; each session's files decode without
// error with ffmpeg at their own size. (Each session is decoded on its own:
// ffmpeg's HLS reader handles neither a second EXT-X-MAP, it keeps the
// first init segment, nor the MPEG-TS continuity counters restarting at a
// discontinuity; players do.)
func TestEndToEndCodecChange(t *testing.T) {
	first := encodeSize(t, "640x360", 6, "-bf", "0")
	second := encodeSize(t, "320x240", 6, "-profile:v", "baseline")
	// As the hub delivers it: the second session's timestamps continue
	// just after the first's.
	last := first[len(first)-1].Timestamp
	frames := append(slices.Clone(first), av.NewEvent(av.EventUnpublish, last), av.NewEvent(av.EventPublish, last))
	for _, f := range second {
		g := *f
		g.Timestamp += last + 1
		frames = append(frames, &g)
	}
	src := &fakeSource{}
	for _, app := range []string{"live", "stb"} {
		src.add(app, "c", &clip{frames: frames, burst: time.Minute, speed: 1, loops: 1})
	}
	p, err := New(src, Config{Logger: discardLogger(), Registerer: prometheus.NewRegistry(), Apps: map[string]AppConfig{"stb": {HLS: HLSMPEGTS}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer p.Close()
	defer srv.Close()
	c := srv.Client()

	for _, tc := range []struct{ app, rend, ext string }{
		{"live", "full", ".m4s"}, {"live", "key", ".m4s"}, {"live", "audio", ".m4s"}, {"stb", "full", ".ts"},
	} {
		base := srv.URL + "/hls/" + tc.app + "/c/"
		var sessions [][]string // per session: init (fMP4), then segments
		waitUntil(t, "both sessions in "+tc.app+"/"+tc.rend, func() bool {
			_, pl := get(t, c, base+tc.rend+".m3u8")
			sessions = sessions[:0]
			sid := ""
			for line := range strings.SplitSeq(string(pl), "\n") {
				switch {
				case strings.HasPrefix(line, "#EXT-X-MAP:URI="):
					sessions = append(sessions, []string{strings.Trim(strings.TrimPrefix(line, "#EXT-X-MAP:URI="), `"`)})
					sid = line[len(`#EXT-X-MAP:URI="`):][:8]
				case strings.HasSuffix(line, tc.ext) && !strings.HasPrefix(line, "#"):
					if line[:8] != sid {
						sid = line[:8]
						sessions = append(sessions, nil)
					}
					sessions[len(sessions)-1] = append(sessions[len(sessions)-1], line)
				}
			}
			// The second session is complete once the stream ended.
			return len(sessions) == 2 && len(sessions[1]) >= 3 && strings.Contains(string(pl), "#EXT-X-DISCONTINUITY")
		})
		for k, files := range sessions {
			var data []byte
			for _, f := range files {
				resp, b := get(t, c, base+f)
				if resp.StatusCode != 200 {
					t.Fatalf("%s: %d", f, resp.StatusCode)
				}
				data = append(data, b...)
			}
			path := filepath.Join(t.TempDir(), tc.rend+tc.ext)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			runTool(t, "ffmpeg", "-hide_banner", "-v", "warning", "-i", path, "-f", "null", "-")
			if tc.rend == "audio" {
				continue
			}
			out, _ := runTool(t, "ffprobe", "-v", "warning", "-select_streams", "v", "-show_entries", "stream=width,height", "-of", "csv=p=0", path)
			sizes := slices.Compact(slices.DeleteFunc(strings.Fields(out), func(s string) bool { return s == "" }))
			if want := []string{"640,360", "320,240"}[k]; len(sizes) != 1 || sizes[0] != want {
				t.Errorf("%s/%s session %d: video %q, want %s", tc.app, tc.rend, k, out, want)
			}
		}
	}
}

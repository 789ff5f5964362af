package packager

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
// ffmpeg that every HLS variant, every MPEG-TS playlist and every DASH
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
		for prog := range 4 { // full, lite, key, audio
			checks = append(checks, func() { decode(t, index, "-map", fmt.Sprintf("0:p:%d", prog)) })
		}
		checks = append(checks, func() { checkSync(t, index, true) })
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

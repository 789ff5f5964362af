// Package gstplay plays a stream with GStreamer's gst-launch-1.0 and
// measures what its video sink received: the GStreamer client of the
// end-to-end tests (packager, cmd/relaymesh).
package gstplay

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// bufferPTS matches the buffer timestamps fakesink reports with -v.
var bufferPTS = regexp.MustCompile(`pts: (\d+):(\d\d):(\d\d)\.(\d{9})`)

// PTS returns the timestamp of a buffer that a video fakesink (silent=false)
// reports in line, if line is such a report.
func PTS(line string) (time.Duration, bool) {
	m := bufferPTS.FindStringSubmatch(line)
	if m == nil || !strings.Contains(line, "fakesink") || !strings.Contains(line, "chain") {
		return 0, false
	}
	var v [4]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return time.Duration(v[0])*time.Hour + time.Duration(v[1])*time.Minute +
		time.Duration(v[2])*time.Second + time.Duration(v[3]), true
}

// Play runs gst-launch-1.0 playbin3 on url until its video sink has
// received want of video (by the buffers' timestamps; 0: until ctx ends),
// and returns the span of video timestamps the sink received (0: none)
// with the end of gst-launch-1.0's output. legacy runs playbin instead,
// with GStreamer's newer adaptive demuxers (hlsdemux2, dashdemux2) ranked
// out so that it takes the legacy ones (hlsdemux, dashdemux; they are not
// streams-aware, which playbin3 needs).
func Play(ctx context.Context, url string, legacy bool, want time.Duration) (time.Duration, string) {
	ctx, cancel := context.WithCancel(ctx)
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
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return 0, err.Error()
	}
	go func() { _ = cmd.Wait(); pw.Close() }() // ended by ctx or cancel
	var lo, hi time.Duration
	n := 0
	var tail []string // the last lines of output
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(tail) == 20 {
			tail = tail[1:]
		}
		tail = append(tail, line)
		ts, ok := PTS(line)
		if !ok {
			continue
		}
		if n == 0 || ts < lo {
			lo = ts
		}
		hi = max(hi, ts)
		n++
		if want > 0 && hi-lo >= want {
			cancel() // enough: the rest of the output drains
		}
	}
	_, _ = io.Copy(io.Discard, pr)
	out := strings.Join(tail, "\n")
	if len(out) > 1500 {
		out = out[len(out)-1500:]
	}
	if n == 0 {
		return 0, out
	}
	return hi - lo, out
}

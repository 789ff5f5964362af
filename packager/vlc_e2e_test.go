package packager

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// vlcStat matches a line of the statistics VLC's rc interface prints.
var vlcStat = regexp.MustCompile(`\|\s*([a-z ]+?)\s*:\s*(\d+)`)

// vlcStats plays url with cvlc for about d (no video or audio output) and
// returns the statistics its rc interface reports then ("frames
// displayed", "buffers played", "demux corrupted", …). VLC refuses to run
// as root: as root it runs as nobody.
func vlcStats(t *testing.T, url string, d time.Duration) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+15*time.Second)
	defer cancel()
	args := []string{"-I", "rc", "--rc-fake-tty", "--stats", "--vout", "dummy", "--aout", "dummy", url}
	cmd := exec.CommandContext(ctx, "cvlc", args...)
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "nobody", "--", "cvlc"}, args...)...)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	_, _ = io.WriteString(in, "stats\n")
	time.Sleep(time.Second)
	_, _ = io.WriteString(in, "quit\n")
	_ = in.Close()
	_ = cmd.Wait()
	stats := map[string]int{}
	for _, m := range vlcStat.FindAllStringSubmatch(out.String(), -1) {
		stats[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(stats) == 0 {
		t.Logf("cvlc printed no statistics:\n%s", out.String())
	}
	return stats
}

// TestVLCPlaysTS: VLC plays ts.m3u8 (tsplay.go): pictures displayed at
// about the frame rate, the audio played, nothing corrupt. The
// statistics of the fMP4 ladder (index.m3u8) are logged beside it. Run
// only when asked (CI does not install VLC):
// RELAYMESH_VLC=1 go test -run TestVLCPlaysTS -v ./packager/
func TestVLCPlaysTS(t *testing.T) {
	if os.Getenv("RELAYMESH_VLC") == "" {
		t.Skip("set RELAYMESH_VLC=1 to play with VLC")
	}
	if _, err := exec.LookPath("cvlc"); err != nil {
		t.Fatalf("RELAYMESH_VLC is set, but: %v", err)
	}
	srv := playersServer(t, AppConfig{})
	waitUntil(t, "four segments", func() bool {
		_, b := get(t, srv.Client(), srv.URL+"/hls/live/b/ts_full.m3u8")
		return strings.Count(string(b), "#EXTINF") >= 4
	})
	const d = 12 * time.Second
	for _, file := range []string{"ts.m3u8", "index.m3u8"} {
		s := vlcStats(t, srv.URL+"/hls/live/b/"+file, d)
		t.Logf("%s in %v: %v", file, d, s)
		if file != "ts.m3u8" {
			continue
		}
		// 25 frames a second; VLC buffers a second or two before it shows
		// one. On a loaded machine it drops a few late pictures (as many
		// on the fMP4 ladder).
		if s["frames displayed"] < 150 || s["frames lost"] > s["frames displayed"]/20 || s["buffers played"] < 100 || s["buffers lost"] > 0 ||
			s["demux corrupted"] > 0 || s["discontinuities"] > 0 {
			t.Errorf("VLC on ts.m3u8: %v", s)
		}
	}
}

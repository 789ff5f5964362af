package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// playVideoTimestamps plays url with the project's RTMP client for d and
// returns the timestamps of the video frames after the sequence header.
func playVideoTimestamps(t *testing.T, url string, d time.Duration, before func()) (ts []uint32, firstKey bool) {
	t.Helper()
	u, err := rtmp.ParseURL(url, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+15*time.Second)
	defer cancel()
	cc, err := rtmp.Dial(ctx, u, rtmp.ConnConfig{}, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	defer cc.Close(nil)
	if _, err := cc.Play(ctx, u.Name); err != nil {
		t.Fatalf("play %s: %v", url, err)
	}
	var end time.Time
	for {
		cc.SetReadTimeout(10 * time.Second)
		m, err := cc.ReadMessage()
		if err != nil {
			t.Fatalf("read %s: %v (after %d video frames)", url, err, len(ts))
		}
		if m.Type != rtmp.TypeVideo || len(m.Payload) < 2 {
			continue
		}
		if m.Payload[1] == 0 { // AVC sequence header
			continue
		}
		if len(ts) == 0 {
			firstKey = m.Payload[0]>>4 == 1
			end = time.Now().Add(d)
		}
		ts = append(ts, m.Timestamp)
		if time.Now().After(end) {
			if before != nil {
				before()
			}
			return ts, firstKey
		}
	}
}

// pullCount is how many pulls a relay runs now.
func pullCount(t *testing.T, n *testNode) int {
	t.Helper()
	resp, err := http.Get("http://" + n.http + "/api/v1/pulls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Pulls []json.RawMessage `json:"pulls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return len(body.Pulls)
}

// TestFirstViewerGetsWholeGOP is issue 12's acceptance test: the viewer
// whose play starts the pulls of primary → r1 → r2 receives every video
// frame from the keyframe it starts at (no gap above 100 ms at 25 fps), ten
// fresh pulls in a row. Before the fix the upstream's start-up burst was
// taken for a slow viewer and most of the first GOP was dropped.
func TestFirstViewerGetsWholeGOP(t *testing.T) {
	requireTool(t, "ffmpeg")
	m := &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	m.r1 = startNode(t, runRelay, "", "--id", "r1", "--upstream", "rtmp://"+m.primary.rtmp, "--linger", "100ms")
	m.r2 = startNode(t, runRelay, "", "--id", "r2", "--upstream", "rtmp://"+m.r1.rtmp, "--linger", "100ms")
	startPublisher(t, m.publishURL(), 120*time.Second, 1500)
	waitLive(t, m.primary, "live", "cam")
	url := "rtmp://" + m.r2.rtmp + "/live/cam"
	worst := 0
	for i := range 10 {
		deadline := time.Now().Add(10 * time.Second)
		for pullCount(t, m.r2) > 0 || pullCount(t, m.r1) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("pull %d: the relays' previous pulls did not end", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
		var subs string
		ts, key := playVideoTimestamps(t, url, 2500*time.Millisecond, func() {
			for _, n := range []*testNode{m.r2, m.r1, m.primary} {
				b, _ := json.Marshal(streams(t, n))
				subs += "\n" + string(b)
			}
		})
		if !key {
			t.Errorf("pull %d: first video frame is not a keyframe", i)
		}
		maxGap := 0
		for j := 1; j < len(ts); j++ {
			maxGap = max(maxGap, int(int32(ts[j]-ts[j-1])))
		}
		worst = max(worst, maxGap)
		t.Logf("pull %d: %d video frames, largest gap %d ms", i, len(ts), maxGap)
		if maxGap > 100 {
			t.Errorf("pull %d: a video gap of %d ms; r2, r1, primary:%s", i, maxGap, subs)
		}
	}
	t.Logf("largest video gap over ten fresh pulls: %d ms", worst)
}

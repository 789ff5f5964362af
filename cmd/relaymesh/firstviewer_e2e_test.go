package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// playVideoTimestamps plays url with the project's RTMP client for d after
// its first video frame and returns the timestamps of the video frames after
// the sequence header, and whether the first is a keyframe; before, when
// set, runs before the connection closes.
func playVideoTimestamps(url string, d time.Duration, before func()) (ts []uint32, firstKey bool, err error) {
	u, err := rtmp.ParseURL(url, 1)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+15*time.Second)
	defer cancel()
	cc, err := rtmp.Dial(ctx, u, rtmp.ConnConfig{}, nil)
	if err != nil {
		return nil, false, fmt.Errorf("dial %s: %w", url, err)
	}
	defer cc.Close(nil)
	if _, err := cc.Play(ctx, u.Name); err != nil {
		return nil, false, fmt.Errorf("play %s: %w", url, err)
	}
	var end time.Time
	cc.SetReadTimeout(10 * time.Second)
	for {
		m, err := cc.ReadMessage()
		if err != nil {
			return ts, firstKey, fmt.Errorf("read %s: %w (after %d video frames)", url, err, len(ts))
		}
		if m.Type != rtmp.TypeVideo || len(m.Payload) < 2 || m.Payload[1] == 0 { // not video, or the AVC sequence header
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
			return ts, firstKey, nil
		}
	}
}

// streamsJSON is a node's streams API answer (for failure messages; safe
// outside the test's goroutine).
func streamsJSON(n *testNode) string {
	resp, err := http.Get("http://" + n.http + "/api/v1/streams")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
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
// fresh pulls in a row; so do two viewers joining while the pull starts.
// Before the fix the upstream's start-up burst was taken for a slow viewer
// and most of the first GOP was dropped.
func TestFirstViewerGetsWholeGOP(t *testing.T) {
	t.Parallel()
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
		// The viewer that starts the pull, and two more joining while it
		// starts (the first viewers of every fresh pull lost frames).
		type result struct {
			ts  []uint32
			key bool
			err error
		}
		var subs string
		results := make([]result, 3)
		var wg sync.WaitGroup
		for v := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(v) * 100 * time.Millisecond)
				var before func()
				if v == 0 {
					before = func() {
						for _, n := range []*testNode{m.r2, m.r1, m.primary} {
							subs += "\n" + streamsJSON(n)
						}
					}
				}
				r := &results[v]
				r.ts, r.key, r.err = playVideoTimestamps(url, 2500*time.Millisecond, before)
			}()
		}
		wg.Wait()
		for v, r := range results {
			if r.err != nil {
				t.Fatalf("pull %d, viewer %d: %v", i, v, r.err)
			}
			if !r.key {
				t.Errorf("pull %d, viewer %d: first video frame is not a keyframe", i, v)
			}
			maxGap := 0
			for j := 1; j < len(r.ts); j++ {
				maxGap = max(maxGap, int(int32(r.ts[j]-r.ts[j-1])))
			}
			worst = max(worst, maxGap)
			t.Logf("pull %d, viewer %d: %d video frames, largest gap %d ms", i, v, len(r.ts), maxGap)
			if maxGap > 100 {
				t.Errorf("pull %d, viewer %d: a video gap of %d ms; r2, r1, primary:%s", i, v, maxGap, subs)
			}
		}
	}
	t.Logf("largest video gap over ten fresh pulls: %d ms", worst)
}

package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// metricSum adds up the samples of a metric on a node's /metrics whose
// labels contain every one of match (e.g. `reason="eof"`).
func metricSum(t *testing.T, n *testNode, name string, match ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + n.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(line, m)
		}
		if i := strings.LastIndexByte(line, ' '); ok && i > 0 {
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}

// TestNonReadingViewersAllCounted (issue 12, item 4): twenty viewers of a
// relay that never read are all closed, and every close is counted under
// its reason (the drills saw 5 of 20); a connection over max_connections
// is counted as refused.
func TestNonReadingViewersAllCounted(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	m := &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	cfg := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(cfg, []byte("rtmp:\n  write_timeout: 2s\n  max_connections: 20\n  viewer_send_buffer: 16384\nhub:\n  slow_viewer_timeout: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.r1 = startNode(t, runRelay, "", "--config", cfg, "--id", "r1", "--upstream", "rtmp://"+m.primary.rtmp)
	startPublisher(t, m.publishURL(), 60*time.Second, 2400)
	waitLive(t, m.primary, "live", "cam")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const viewers = 20
	for i := range viewers {
		nc, err := net.Dial("tcp", m.r1.rtmp)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.(*net.TCPConn).SetReadBuffer(4096)
		cc, err := rtmp.DialConn(ctx, nc, rtmp.URL{Host: m.r1.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatalf("viewer %d: %v", i, err)
		}
		t.Cleanup(func() { cc.Close(nil) })
		if _, err := cc.Play(ctx, "cam"); err != nil {
			t.Fatalf("viewer %d: %v", i, err)
		}
		// ... and never reads again.
	}
	// One more than max_connections.
	nc, err := net.Dial("tcp", m.r1.rtmp)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	waitFor(t, "the refused connection counted", 5*time.Second, func() bool {
		return metricSum(t, m.r1, "relaymesh_rtmp_connections_refused_total", `reason="limit"`) == 1
	})
	waitFor(t, "every viewer closed and counted", 40*time.Second, func() bool {
		return metricSum(t, m.r1, "relaymesh_rtmp_viewers_closed_total") >= viewers
	})
	time.Sleep(200 * time.Millisecond)
	total := metricSum(t, m.r1, "relaymesh_rtmp_viewers_closed_total")
	slow := metricSum(t, m.r1, "relaymesh_rtmp_viewers_closed_total", `reason="too_slow"`)
	wto := metricSum(t, m.r1, "relaymesh_rtmp_viewers_closed_total", `reason="write_timeout"`)
	t.Logf("closed %v: too_slow %v, write_timeout %v; write timeouts %v; hub too_slow %v", total, slow, wto,
		metricSum(t, m.r1, "relaymesh_rtmp_timeouts_total", `kind="write"`),
		metricSum(t, m.r1, "relaymesh_hub_subscribers_closed_total", `reason="too_slow"`))
	if total != viewers || slow+wto != viewers {
		t.Fatalf("%v closes counted (%v too slow, %v write timeouts), want %d", total, slow, wto, viewers)
	}
	if n := metricSum(t, m.r1, "relaymesh_rtmp_timeouts_total", `kind="write"`); n != wto {
		t.Errorf("write timeouts %v, viewers closed by one %v", n, wto)
	}
}

// A viewer that stops reading is closed as too slow by the hub (here before
// the write timeout): counted under too_slow, once, though its connection
// only goes at the write timeout (its status cannot get out).
func TestTooSlowViewerCounted(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	m := &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	cfg := filepath.Join(t.TempDir(), "relay.yaml")
	if err := os.WriteFile(cfg, []byte("rtmp:\n  write_timeout: 6s\n  viewer_send_buffer: 16384\nhub:\n  slow_viewer_timeout: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.r1 = startNode(t, runRelay, "", "--config", cfg, "--id", "r1", "--upstream", "rtmp://"+m.primary.rtmp)
	startPublisher(t, m.publishURL(), 60*time.Second, 2400)
	waitLive(t, m.primary, "live", "cam")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const viewers = 3
	for i := range viewers {
		nc, err := net.Dial("tcp", m.r1.rtmp)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.(*net.TCPConn).SetReadBuffer(4096)
		cc, err := rtmp.DialConn(ctx, nc, rtmp.URL{Host: m.r1.rtmp, App: "live"}, rtmp.ConnConfig{}, nil)
		if err != nil {
			t.Fatalf("viewer %d: %v", i, err)
		}
		t.Cleanup(func() { cc.Close(nil) })
		if _, err := cc.Play(ctx, "cam"); err != nil {
			t.Fatalf("viewer %d: %v", i, err)
		}
	}
	waitFor(t, "every viewer closed and counted", 30*time.Second, func() bool {
		return metricSum(t, m.r1, "relaymesh_rtmp_viewers_closed_total") >= viewers
	})
	time.Sleep(200 * time.Millisecond)
	slow := metricSum(t, m.r1, "relaymesh_rtmp_viewers_closed_total", `reason="too_slow"`)
	total := metricSum(t, m.r1, "relaymesh_rtmp_viewers_closed_total")
	hubSlow := metricSum(t, m.r1, "relaymesh_hub_subscribers_closed_total", `reason="too_slow"`)
	t.Logf("closed %v, too_slow %v; hub too_slow %v", total, slow, hubSlow)
	if slow != viewers || total != viewers || hubSlow != viewers {
		t.Fatalf("closes %v (too_slow %v, hub %v), want %d too slow", total, slow, hubSlow, viewers)
	}
}

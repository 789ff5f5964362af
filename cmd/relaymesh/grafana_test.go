package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rtmp"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

var metricLine = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )`)

// scrapeNames returns the metric names a /metrics page exposes, with the
// histogram and summary series folded back into their family names.
func scrapeNames(t *testing.T, url string, into map[string]bool) {
	t.Helper()
	_, body := httpGet(t, url)
	for _, m := range metricLine.FindAllStringSubmatch(body, -1) {
		into[m[1]] = true
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m[1], suf); ok {
				into[base] = true
			}
		}
	}
}

// meshMetricNames runs the dev mesh with a stream published, an RTMP viewer
// on a relay and an HLS viewer, and returns every metric name the primary,
// the relays and the orchestrator expose.
func meshMetricNames(t *testing.T) map[string]bool {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, stop := startDev(t, ctx, cancel)
	defer stop()
	var mv redirector.MeshView
	for i := 0; ; i++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/api/v1/mesh", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&mv)
		resp.Body.Close()
		up := 0
		for _, r := range mv.Relays {
			if r.Status == "up" {
				up++
			}
		}
		if up == len(mv.Relays) && up > 0 && mv.Primary.Status == "up" {
			break
		}
		if i > 200 {
			t.Fatalf("relays not up: %+v", mv.Relays)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	synthPublish(pubCtx, t, mv.Primary.RTMPURL+"/live/metrics", 1)
	relay := mv.Relays[0]
	u, _ := rtmp.ParseURL(relay.RTMPURL+"/live/metrics", 1)
	v, err := rtmp.Dial(ctx, u, rtmp.ConnConfig{}, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close(nil)
	if _, err := v.Play(ctx, "metrics"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := v.ReadMessage(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		code, _ := httpGet(t, relay.HTTPURL+"/hls/live/metrics/index.m3u8")
		if code == 200 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	httpGet(t, "http://"+addr+"/play/live/metrics?proto=hls")
	names := map[string]bool{}
	scrapeNames(t, "http://"+addr+"/metrics", names)
	scrapeNames(t, mv.Primary.HTTPURL+"/metrics", names)
	for _, r := range mv.Relays {
		scrapeNames(t, r.HTTPURL+"/metrics", names)
	}
	return names
}

var metricRef = regexp.MustCompile(`\b(?:relaymesh|go|process)_[a-z0-9_]+`)

// Every metric docs/grafana-dashboard.json queries is exposed by a server
// of a running mesh (with a stream, an RTMP and an HLS viewer).
func TestGrafanaDashboardMetrics(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	used := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "expr" || k == "query" || k == "definition") {
					for _, m := range metricRef.FindAllString(s, -1) {
						used[m] = true
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(dash)
	if len(used) < 10 {
		t.Fatalf("the dashboard queries only %d metrics", len(used))
	}
	have := meshMetricNames(t)
	var missing []string
	for m := range used {
		if !have[m] {
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/grafana-dashboard.json queries metrics no server exposes: %s", strings.Join(missing, ", "))
	}
}

package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

func serve(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /healthz fails with a JSON reason while a check fails, and while draining.
func TestHealthzChecks(t *testing.T) {
	s := New(slog.New(slog.DiscardHandler))
	var bad atomic.Bool
	s.AddCheck("upstream", func() error {
		if bad.Load() {
			return errors.New("live/cam: upstream 127.0.0.1:1 unreachable")
		}
		return nil
	})
	base := serve(t, s)
	if code, body := get(t, base+"/healthz"); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("%d %s", code, body)
	}
	bad.Store(true)
	code, body := get(t, base+"/healthz")
	var h Health
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != 503 || h.Status != "unhealthy" ||
		len(h.Reasons) != 1 || h.Reasons[0].Check != "upstream" || !strings.Contains(h.Reasons[0].Error, "unreachable") {
		t.Fatalf("%d %s", code, body)
	}
	bad.Store(false)
	s.SetDraining(true)
	if code, body := get(t, base+"/healthz"); code != 503 || !strings.Contains(body, "draining") {
		t.Fatalf("%d %s", code, body)
	}
}

// /metrics has relaymesh_build_info and the duration of requests by route.
func TestMetricsBuildInfoAndDurations(t *testing.T) {
	s := New(slog.New(slog.DiscardHandler))
	s.Mux.HandleFunc("GET /api/v1/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	base := serve(t, s)
	get(t, base+"/api/v1/things/1")
	get(t, base+"/api/v1/things/2")
	get(t, base+"/nothing-here")
	_, m := get(t, base+"/metrics")
	for _, want := range []string{
		`relaymesh_build_info{goversion="go`,
		`relaymesh_http_request_duration_seconds_count{code="418",method="GET",route="GET /api/v1/things/{id}"} 2`,
		`relaymesh_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

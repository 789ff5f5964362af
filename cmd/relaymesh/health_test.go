package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/httpserver"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A relay told by the orchestrator to hold a stream it cannot pull (its
// upstream does not answer) fails /healthz with the reason; its metrics
// show the pull connecting and the reconnects.
func TestHealthRelayUpstreamUnreachable(t *testing.T) {
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	dead := freeAddr(t) // nothing listens there
	r := startNode(t, runRelay, "", "--id", "r1", "--upstream", "rtmp://"+dead, "--nats", e.ClientURL())
	base := "http://" + r.http
	if code, body := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("before any hold: %d %s", code, body)
	}
	nc, err := nats.Connect(e.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subj, _ := bus.CommandSubject("r1")
	cmd, _ := bus.Encode(bus.Command{Op: bus.OpOpen, App: "live", Name: "cam"})
	deadline := time.Now().Add(15 * time.Second)
	for {
		// The agent subscribes once it is connected: retry until it answers.
		if _, err := nc.Request(subj, cmd, 2*time.Second); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay's agent never answered the open command")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var h httpserver.Health
	for {
		code, body := httpGet(t, base+"/healthz")
		if code == 503 {
			if err := json.Unmarshal([]byte(body), &h); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still %d %s while the held stream cannot be pulled", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if h.Status != "unhealthy" || len(h.Reasons) != 1 || h.Reasons[0].Check != "upstream" ||
		!strings.Contains(h.Reasons[0].Error, "live/cam") || !strings.Contains(h.Reasons[0].Error, dead) {
		t.Fatalf("%+v", h)
	}
	_, m := httpGet(t, base+"/metrics")
	for _, want := range []string{`relaymesh_upstream_pulls{held="true",state="connecting"} 1`, "relaymesh_upstream_reconnects_total", "relaymesh_build_info"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Released, the relay is healthy again.
	cmd, _ = bus.Encode(bus.Command{Op: bus.OpClose, App: "live", Name: "cam"})
	if _, err := nc.Request(subj, cmd, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("after close: %d %s", code, body)
	}
}

// The orchestrator has /healthz (failing while NATS is away) and /metrics.
func TestHealthOrchestrator(t *testing.T) {
	t.Parallel()
	e, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			e.Shutdown()
		}
	}()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runOrchestrator(ctx, []string{"--http", addr, "--nats", e.ClientURL(), "--log-level", "error"})
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(b), `"ok"`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("orchestrator /healthz not ok: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, m := httpGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{"relaymesh_build_info", "relaymesh_orchestrator_leader", "relaymesh_http_request_duration_seconds"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	e.Shutdown()
	stopped = true
	for {
		code, body := httpGet(t, "http://"+addr+"/healthz")
		if code == 503 && strings.Contains(body, "nats") {
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("/healthz with NATS down: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

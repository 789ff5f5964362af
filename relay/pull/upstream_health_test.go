package pull

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/hub"
)

// A held stream whose upstream does not answer makes HeldHealth fail and
// counts reconnects; released, the relay is healthy again.
func TestUpstreamHeldHealth(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u, err := New(ctx, Config{URL: "rtmp://" + dead, RelayID: "r1", BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond},
		hub.NewRegistry(hub.Config{}.WithDefaults(), log), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.HeldHealth(); err != nil {
		t.Fatal(err)
	}
	if err := u.Hold(ctx, "live", "cam", ""); err == nil {
		t.Fatal("hold from a dead upstream succeeded")
	}
	err = u.HeldHealth()
	if err == nil || !strings.Contains(err.Error(), "live/cam") || !strings.Contains(err.Error(), dead) {
		t.Fatalf("HeldHealth: %v", err)
	}
	for i := 0; u.UpstreamReconnects() == 0; i++ {
		if i > 500 {
			t.Fatal("no reconnect counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(u.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "relaymesh_upstream_pulls" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["state"] == "connecting" && labels["held"] == "true" && m.GetGauge().GetValue() == 1 {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no held connecting pull in %v", mfs)
	}
	u.Release("live", "cam")
	if err := u.HeldHealth(); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

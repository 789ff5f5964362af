package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	got := make(chan Body, 10)
	answer := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b Body
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s", r.Method, r.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Error(err)
		}
		got <- b
		if r.URL.Path == "/slow" {
			time.Sleep(300 * time.Millisecond)
		}
		w.WriteHeader(answer)
	}))
	defer srv.Close()
	c := New(Config{OnPlay: srv.URL + "/play", OnPublish: srv.URL + "/slow", Timeout: 100 * time.Millisecond, Server: "r1"})
	b := Body{Action: OnPlay, ClientID: "c1", IP: "127.0.0.1", Proto: "rtmp", App: "live", Stream: "cam", Param: "a=b"}
	if err := c.Gate(context.Background(), b); err != nil {
		t.Fatalf("2xx: %v", err)
	}
	if g := <-got; g.Server != "r1" || g.App != "live" || g.Stream != "cam" || g.Param != "a=b" || g.Time == "" || g.Action != OnPlay {
		t.Errorf("body %+v", g)
	}
	answer = http.StatusForbidden
	var d *Denied
	if err := c.Gate(context.Background(), b); !errors.As(err, &d) || d.Status != 403 {
		t.Fatalf("403: %v", err)
	}
	<-got
	// Timeout: fail-closed refuses, fail-open allows.
	answer = http.StatusOK
	pb := b
	pb.Action = OnPublish
	if err := c.Gate(context.Background(), pb); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("timeout, fail-closed: %v", err)
	}
	<-got
	open := New(Config{OnPublish: srv.URL + "/slow", Timeout: 100 * time.Millisecond, FailOpen: true})
	if err := open.Gate(context.Background(), pb); err != nil {
		t.Fatalf("timeout, fail-open: %v", err)
	}
	<-got
	// Not configured: allows without a call.
	if err := c.Gate(context.Background(), Body{Action: OnUnpublish}); err != nil {
		t.Fatal(err)
	}
	var nilc *Client
	if err := nilc.Gate(context.Background(), b); err != nil || nilc.Has(OnPlay) {
		t.Fatal("nil client")
	}
	nilc.Notify(b)
}

func TestNotifyNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	got := make(chan Body, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b Body
		_ = json.NewDecoder(r.Body).Decode(&b)
		<-release
		got <- b
	}))
	defer srv.Close()
	c := New(Config{OnStop: srv.URL, Queue: 2, Timeout: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 50; i++ {
			c.Notify(Body{Action: OnStop, Stream: "cam"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Notify blocked on a full queue")
	}
	close(release)
	if b := <-got; b.Action != OnStop || b.Stream != "cam" {
		t.Errorf("body %+v", b)
	}
}

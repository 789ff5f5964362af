package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rpc"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
)

// meshClient is a test client that records the calls the server makes.
type meshClient struct {
	*rpc.Client
	mu    sync.Mutex
	calls map[string]int
	obj   *rpc.Object
}

func (c *meshClient) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func dialMesh(t *testing.T, ctx context.Context, url string) *meshClient {
	t.Helper()
	mc := &meshClient{calls: map[string]int{}}
	c, err := rpc.Dial(ctx, url, rpc.ClientConfig{Log: quietLog, OnCall: func(method string, args []any) {
		mc.mu.Lock()
		mc.calls[method]++
		mc.mu.Unlock()
	}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(c.Close)
	mc.Client = c
	return mc
}

// waitAll polls cond for every client until it holds (bounded by ctx).
func waitAll(t *testing.T, ctx context.Context, what string, cs []*meshClient, cond func(*meshClient) bool) {
	t.Helper()
	for _, c := range cs {
		for !cond(c) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: timed out", what)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

func postJSON(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

type webhookCall struct {
	App, Scope, Method string
	ClientID           string `json:"client_id"`
	Args               []any
}

// quickDrain writes a config file that lets nodes stop quickly (a relay's
// scope link keeps its upstream busy until the drain ends).
func quickDrain(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(p, []byte("rtmp:\n  drain: 100ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSharedObjectsAndRPCAcrossChain runs a primary and two relays in a
// chain (primary ← r1 ← r2) with clients on each.
func TestSharedObjectsAndRPCAcrossChain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var hookMu sync.Mutex
	var hooks []webhookCall
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c webhookCall
		_ = json.NewDecoder(r.Body).Decode(&c)
		hookMu.Lock()
		hooks = append(hooks, c)
		hookMu.Unlock()
		if c.Method == "slow" {
			<-r.Context().Done()
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "client": c.ClientID})
	}))
	defer hook.Close()

	cfgFile := quickDrain(t)
	primary := startNode(t, runPrimary, "", "--config", cfgFile, "--open", "--data", t.TempDir(),
		"--webhook", "live="+hook.URL, "--webhook-timeout", "300ms")
	r1 := startNode(t, runRelay, "", "--config", cfgFile, "--id", "r1", "--upstream", "rtmp://"+primary.rtmp)
	r2 := startNode(t, runRelay, "", "--config", cfgFile, "--id", "r2", "--upstream", "rtmp://"+r1.rtmp)
	nodes := []*testNode{primary, r1, r2}

	// 34 + 33 + 33 clients, all using the transient object "chat".
	var all []*meshClient
	perNode := make([][]*meshClient, 3)
	for i := 0; i < 100; i++ {
		n := i % 3
		c := dialMesh(t, ctx, "rtmp://"+nodes[n].rtmp+"/live/room")
		o, err := c.Use(ctx, "chat", false)
		if err != nil {
			t.Fatalf("client %d use: %v", i, err)
		}
		c.obj = o
		all = append(all, c)
		perNode[n] = append(perNode[n], c)
	}

	t.Run("change on one relay is seen everywhere", func(t *testing.T) {
		if err := perNode[1][0].obj.Set(ctx, "topic", "hi"); err != nil {
			t.Fatal(err)
		}
		waitAll(t, ctx, "topic", all, func(c *meshClient) bool { v, _ := c.obj.Get("topic"); return v == "hi" })
	})

	t.Run("100 concurrent writers converge", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, len(all))
		for i, c := range all {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.obj.Set(ctx, fmt.Sprintf("k%03d", i), float64(i)); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		waitAll(t, ctx, "all slots", all, func(c *meshClient) bool { s, _ := c.obj.Slots(); return len(s) == 101 })
		want, wantV := all[0].obj.Slots()
		for i, c := range all {
			got, v := c.obj.Slots()
			if v != wantV || !so.ValueEqual(map[string]any(got), map[string]any(want)) {
				t.Fatalf("client %d: version %d slots %v, client 0: version %d", i, v, got, wantV)
			}
			if err := c.obj.VersionError(); err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
		}
	})

	t.Run("send message reaches every client once", func(t *testing.T) {
		if err := perNode[2][0].obj.Send("ping", "x"); err != nil {
			t.Fatal(err)
		}
		if err := perNode[2][0].obj.Send("end"); err != nil {
			t.Fatal(err)
		}
		count := func(c *meshClient, h string) int {
			n := 0
			for _, m := range c.obj.Messages() {
				if m.Handler == h {
					n++
				}
			}
			return n
		}
		waitAll(t, ctx, "send", all, func(c *meshClient) bool { return count(c, "end") == 1 })
		for i, c := range all {
			if n := count(c, "ping"); n != 1 {
				t.Fatalf("client %d got ping %d times", i, n)
			}
		}
	})

	t.Run("RPC from the far relay", func(t *testing.T) {
		c := perNode[2][1]
		v, err := c.Call(ctx, "echo", "hello")
		if err != nil || v != "hello" {
			t.Fatalf("echo: %v %v", v, err)
		}
		if v, err := c.Call(ctx, "serverTime"); err != nil || v.(float64) <= 0 {
			t.Fatalf("serverTime: %v %v", v, err)
		}
		id, err := c.Call(ctx, "clientId")
		if err != nil || !strings.HasPrefix(id.(string), "r2:") {
			t.Fatalf("clientId: %v %v", id, err)
		}
		v, err = c.Call(ctx, "hello", "a", 2.0)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := v.(map[string]any)
		if o["ok"] != true || o["client"] != id {
			t.Fatalf("webhook result %v", v)
		}
		hookMu.Lock()
		last := hooks[len(hooks)-1]
		hookMu.Unlock()
		if last.App != "live" || last.Scope != "live/room" || last.ClientID != id || last.Method != "hello" || len(last.Args) != 2 {
			t.Fatalf("webhook got %+v", last)
		}
		_, err = c.Call(ctx, "slow")
		var se *rpc.StatusError
		if !errors.As(err, &se) || se.Code != rpc.CodeCallFailed || !strings.Contains(se.Description, "did not answer") {
			t.Fatalf("slow webhook: %v", err)
		}
	})

	t.Run("server to client calls", func(t *testing.T) {
		base := "http://" + primary.http + "/api/v1/apps/live/scopes/room"
		if code, out := postJSON(t, base+"/call", map[string]any{"method": "notice", "args": []any{"x"}}); code != 200 {
			t.Fatalf("call: %d %v", code, out)
		}
		if code, out := postJSON(t, base+"/call", map[string]any{"method": "done"}); code != 200 {
			t.Fatalf("call: %d %v", code, out)
		}
		waitAll(t, ctx, "broadcast", all, func(c *meshClient) bool { return c.count("done") == 1 })
		for i, c := range all {
			if n := c.count("notice"); n != 1 {
				t.Fatalf("client %d got notice %d times", i, n)
			}
		}
		target := perNode[2][2]
		id, err := target.Call(ctx, "clientId")
		if err != nil {
			t.Fatal(err)
		}
		if code, out := postJSON(t, base+"/clients/"+id.(string)+"/call", map[string]any{"method": "direct"}); code != 202 {
			t.Fatalf("client call: %d %v", code, out)
		}
		waitAll(t, ctx, "direct", []*meshClient{target}, func(c *meshClient) bool { return c.count("direct") == 1 })
		// The same path to a client of the primary.
		pc := perNode[0][0]
		pid, _ := pc.Call(ctx, "clientId")
		if code, out := postJSON(t, base+"/clients/"+pid.(string)+"/call", map[string]any{"method": "direct"}); code != 200 {
			t.Fatalf("client call: %d %v", code, out)
		}
		waitAll(t, ctx, "direct", []*meshClient{pc}, func(c *meshClient) bool { return c.count("direct") == 1 })
		if code, _ := postJSON(t, base+"/clients/nobody:c1/call", map[string]any{"method": "x"}); code != 202 && code != 404 {
			t.Fatalf("unknown client: %d", code)
		}
		if code, _ := postJSON(t, base+"/call", map[string]any{"method": "_result"}); code != 400 {
			t.Fatalf("bad method: %d", code)
		}
	})

	t.Run("hostile clients", func(t *testing.T) {
		// An oversized value is refused with a status; others keep working.
		c := perNode[2][3]
		err := c.obj.Set(ctx, "big", strings.Repeat("x", 40<<10))
		var se *rpc.StatusError
		if !errors.As(err, &se) || se.Code != so.StatusLimitExceeded {
			t.Fatalf("oversized value: %v", err)
		}
		// A flooding client is closed; the others are unaffected.
		for _, n := range []int{0, 2} {
			f := dialMesh(t, ctx, "rtmp://"+nodes[n].rtmp+"/live/room")
			for i := 0; i < 5000; i++ {
				if f.Notify("echo", i) != nil {
					break
				}
			}
			select {
			case <-f.Done():
			case <-ctx.Done():
				t.Fatalf("flooding client on node %d not closed", n)
			}
		}
		if err := perNode[2][4].obj.Set(ctx, "after", true); err != nil {
			t.Fatal(err)
		}
		waitAll(t, ctx, "after flood", all, func(c *meshClient) bool { v, _ := c.obj.Get("after"); return v == true })
	})
}

// TestPersistentObjectSurvivesPrimaryRestart saves a persistent object
// through a relay and reads it back after the primary restarted.
func TestPersistentObjectSurvivesPrimaryRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data := t.TempDir()
	cfgFile := quickDrain(t)
	primary := startNode(t, runPrimary, "", "--config", cfgFile, "--open", "--data", data)
	r1 := startNode(t, runRelay, "", "--config", cfgFile, "--id", "r1", "--upstream", "rtmp://"+primary.rtmp)
	c := dialMesh(t, ctx, "rtmp://"+r1.rtmp+"/live/room")
	o, err := c.Use(ctx, "score", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Set(ctx, "a", 1.0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	primary.stop(t)
	primary = startNode(t, runPrimary, primary.rtmp, "--config", cfgFile, "--open", "--data", data)
	c2 := dialMesh(t, ctx, "rtmp://"+primary.rtmp+"/live/room")
	o2, err := c2.Use(ctx, "score", true)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := o2.Get("a"); v != 1.0 {
		t.Fatalf("after restart: a = %v", v)
	}
	// The relay re-syncs through its reconnected link too.
	c3 := dialMesh(t, ctx, "rtmp://"+r1.rtmp+"/live/room")
	o3, err := c3.Use(ctx, "score", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := o3.Wait(ctx, func(s map[string]any, _ uint32) bool { return s["a"] == 1.0 }); err != nil {
		t.Fatal(err)
	}
}

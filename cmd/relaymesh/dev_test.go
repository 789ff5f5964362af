package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/topology/redirector"
)

// TestDevMeshAnswers starts the whole development mesh in-process and
// checks that the mesh API sees every relay and that /play places a viewer.
func TestDevMeshAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, stop := startDev(t, ctx, cancel)
	getJSON := func(path string, v any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	var mv redirector.MeshView
	for i := 0; ; i++ {
		getJSON("/api/v1/mesh", &mv)
		up := 0
		for _, r := range mv.Relays {
			if r.Status == "up" {
				up++
			}
		}
		if up == 4 {
			break
		}
		if i > 200 {
			t.Fatalf("relays not all up: %+v", mv.Relays)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if mv.Primary.RTMPURL == "rtmp://127.0.0.1:1935" {
		t.Fatal("the primary's address is the graph's, not the one it listens on")
	}
	var ch redirector.Choice
	getJSON("/play/live/test?ip=198.51.100.7&proto=hls", &ch)
	if ch.Relay != "primary" || ch.Viewer != "US" {
		t.Fatalf("choice %+v", ch)
	}

	// Shared objects work on every server of the dev mesh: a change made
	// on one relay reaches clients of another relay and of the primary.
	var cs []*meshClient
	for _, url := range []string{mv.Relays[0].RTMPURL, mv.Relays[1].RTMPURL, mv.Primary.RTMPURL} {
		c := dialMesh(t, ctx, url+"/live/room")
		o, err := c.Use(ctx, "chat", false)
		if err != nil {
			t.Fatalf("%s: use: %v", url, err)
		}
		c.obj = o
		cs = append(cs, c)
	}
	if err := cs[0].obj.Set(ctx, "topic", "dev"); err != nil {
		t.Fatal(err)
	}
	waitAll(t, ctx, "topic", cs, func(c *meshClient) bool { v, _ := c.obj.Get("topic"); return v == "dev" })

	// An HTTP viewer alone makes a dev relay pull the stream (the watch
	// link of the banner sends browsers there): its HLS URL answers
	// something other than 404 once the primary has the stream.
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	synthPublish(pubCtx, t, mv.Primary.RTMPURL+"/live/devcam", 1)
	hls := mv.Relays[2].HTTPURL + "/hls/live/devcam/index.m3u8"
	for i := 0; ; i++ {
		resp, err := http.Get(hls)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			break
		}
		if i > 100 {
			t.Fatalf("%s: still %s after 10 s with the stream published to the primary", hls, resp.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopPub()
	stop()
}

// startDev runs the development mesh (devMain) until stop, which cancels
// ctx and checks that the mesh shuts down cleanly; it returns the
// redirector's address once everything listens.
func startDev(t *testing.T, ctx context.Context, cancel context.CancelFunc) (addr string, stop func()) {
	t.Helper()
	addrCh := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devMain(ctx, []string{"--http", "127.0.0.1:0", "--log-level", "warn"}, func(a string) { addrCh <- a })
	}()
	select {
	case addr = <-addrCh:
	case err := <-done:
		t.Fatalf("dev stopped early: %v", err)
	}
	var once sync.Once
	return addr, func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("dev returned %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("dev did not stop")
			}
		})
	}
}

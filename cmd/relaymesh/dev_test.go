package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/topology/graph"
	"github.com/relaymesh/relaymesh/topology/redirector"
)

// TestDevMeshAnswers starts the whole development mesh in-process and
// checks that the mesh API sees every relay and that /play places a viewer.
func TestDevMeshAnswers(t *testing.T) {
	t.Parallel()
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
		// The primary's address is the graph's until its first status
		// says where it listens (relays can be up before that).
		reported := mv.Primary.RTMPURL != "rtmp://127.0.0.1:1935"
		if up == 4 && reported {
			break
		}
		if i > 200 {
			if !reported {
				t.Fatal("the primary's address is the graph's, not the one it listens on")
			}
			t.Fatalf("relays not all up: %+v", mv.Relays)
		}
		time.Sleep(50 * time.Millisecond)
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

// With --play-protect and --play-token-secret every server of the dev mesh
// refuses HLS viewers of the app without a token, and /play answers with
// one that the server it names accepts.
func TestDevPlayTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addrCh := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devMain(ctx, devTestArgs("--log-level", "warn", "--play-protect", "live", "--play-token-secret", "dev-s3cret"),
			io.Discard, func(a string) { addrCh <- a })
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case err := <-done:
		t.Fatalf("dev stopped early: %v", err)
	}
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("dev did not stop")
		}
	}()
	get := func(u string, accept string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		req.Header.Set("Accept", accept)
		return http.DefaultClient.Do(req)
	}
	// The redirector names the servers at their graph addresses until
	// their agents report the ones they listen on.
	for i := 0; ; i++ {
		var mv redirector.MeshView
		resp, err := get("http://"+addr+"/api/v1/mesh", "application/json")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&mv)
		resp.Body.Close()
		if err == nil && mv.Primary.RTMPURL != "" && mv.Primary.RTMPURL != "rtmp://127.0.0.1:1935" {
			break
		}
		if i > 200 {
			t.Fatalf("the primary's address is not reported: %+v (%v)", mv.Primary, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var ch redirector.Choice
	resp, err := get("http://"+addr+"/play/live/test?ip=198.51.100.7&proto=hls", "application/json")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&ch)
	resp.Body.Close()
	if err != nil || ch.PlayToken == "" || !strings.Contains(ch.URL, "/t/"+ch.PlayToken+"/") {
		t.Fatalf("choice %+v (%v)", ch, err)
	}
	u, err := url.Parse(ch.URL)
	if err != nil {
		t.Fatal(err)
	}
	without := u.Scheme + "://" + u.Host + "/hls/live/test/index.m3u8"
	r, err := get(without, "*/*")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized {
		t.Errorf("%s without a token: %s", without, r.Status)
	}
	r, err = get(ch.URL, "*/*")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode == http.StatusUnauthorized || r.StatusCode == http.StatusForbidden {
		t.Errorf("%s with the redirect's token: %s", ch.URL, r.Status)
	}
}

// devTestArgs are dev's flags with every port free (tests run side by side).
func devTestArgs(more ...string) []string {
	return append([]string{"--rtmp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--primary-http", "127.0.0.1:0", "--relay-base-port", "0"}, more...)
}

// startDev runs the development mesh (devMain) until stop, which cancels
// ctx and checks that the mesh shuts down cleanly; it returns the
// redirector's address once everything listens.
func startDev(t *testing.T, ctx context.Context, cancel context.CancelFunc) (addr string, stop func()) {
	t.Helper()
	addrCh := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devMain(ctx, devTestArgs("--log-level", "warn"), io.Discard, func(a string) { addrCh <- a })
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

// devNodeFree is a dev-mesh server with the default configuration on free
// loopback ports.
func devNodeFree(s graph.Server, log *slog.Logger) (*node, error) {
	cfg := config.Default()
	cfg.RTMP.Listen, cfg.HTTP.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Relay.ID, cfg.Relay.Location = s.ID, s.Location
	return newNode(cfg, log)
}

// relaymesh dev listens on fixed ports by default (a publisher set up once
// keeps working): the primary at 1935, the redirector at 8080, the
// primary's HTTP at 8081, relay i at base+2i (RTMP) and base+2i+1 (HTTP).
func TestDevFixedPorts(t *testing.T) {
	cfg := config.Default()
	if _, err := devFlags(&cfg).parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.RTMP.Listen != "127.0.0.1:1935" || cfg.HTTP.Listen != "127.0.0.1:8080" || cfg.Dev.PrimaryHTTP != "127.0.0.1:8081" || cfg.Dev.RelayBasePort != 1940 {
		t.Fatalf("defaults %s %s %s %d", cfg.RTMP.Listen, cfg.HTTP.Listen, cfg.Dev.PrimaryHTTP, cfg.Dev.RelayBasePort)
	}
	g, err := graph.DevWorld()
	if err != nil {
		t.Fatal(err)
	}
	// A base with 8 free ports after it, on loopback.
	for try := 0; ; try++ {
		_, port, _ := net.SplitHostPort(freeAddr(t))
		base, _ := strconv.Atoi(port)
		base = base &^ 15
		cfg := config.Default()
		cfg.RTMP.Listen, cfg.HTTP.Listen, cfg.Dev.PrimaryHTTP, cfg.Dev.RelayBasePort = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", base
		ls, err := devListeners(cfg, g)
		if err != nil {
			if try < 5 {
				continue
			}
			t.Fatal(err)
		}
		var got []string
		for _, l := range ls {
			got = append(got, l.name+" "+l.what+" "+l.ln.Addr().String())
			l.ln.Close()
		}
		want := []string{}
		for i, id := range []string{"relay-eu", "relay-na", "relay-as", "relay-sa"} {
			want = append(want, fmt.Sprintf("%s RTMP 127.0.0.1:%d", id, base+2*i), fmt.Sprintf("%s HTTP 127.0.0.1:%d", id, base+2*i+1))
		}
		if s := strings.Join(got, "\n"); !strings.Contains(s, strings.Join(want, "\n")) {
			t.Fatalf("listeners:\n%s\nwant relays:\n%s", s, strings.Join(want, "\n"))
		}
		return
	}
}

// A port in use stops relaymesh dev at once with an error that names the
// address and the flag (it used to print nothing and wait for a signal).
func TestDevPortTaken(t *testing.T) {
	for _, flagName := range []string{"http", "rtmp", "primary-http"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		args := devTestArgs("--log-level", "error", "--"+flagName, ln.Addr().String())
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		go func() { done <- devMain(ctx, args, io.Discard, nil) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "--"+flagName) ||
				!strings.Contains(err.Error(), "address already in use") {
				t.Errorf("--%s taken: %v", flagName, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("--%s taken: relaymesh dev neither failed nor stopped within 10 s", flagName)
		}
		cancel()
		ln.Close()
	}
}

// Every address of the mesh is in the banner, and URLs with a query string
// are quoted so that pasting them into a shell works.
func TestDevBanner(t *testing.T) {
	var b strings.Builder
	devBanner(&b, devAddrs{primaryRTMP: "127.0.0.1:1935", primaryHTTP: "127.0.0.1:8081", web: "127.0.0.1:8080",
		relays: []devServer{{"eu", "127.0.0.1:1940", "127.0.0.1:1941"}, {"na", "127.0.0.1:1942", "127.0.0.1:1943"}}})
	out := b.String()
	for _, want := range []string{"rtmp://127.0.0.1:1935/live/NAME", "'http://127.0.0.1:8080/play/live/NAME?proto=hls'", "'http://127.0.0.1:8080/play/live/NAME?proto=rtmp'",
		"http://127.0.0.1:8081", "rtmp://127.0.0.1:1940", "http://127.0.0.1:1941", "rtmp://127.0.0.1:1942", "http://127.0.0.1:1943",
		"dashboard:  http://127.0.0.1:8080/", "http://127.0.0.1:8080/api/v1/mesh"} {
		if !strings.Contains(out, want) {
			t.Errorf("banner lacks %s:\n%s", want, out)
		}
	}
	for _, f := range strings.Fields(out) {
		if strings.ContainsAny(f, "?&|") && !(strings.HasPrefix(f, "'") && strings.HasSuffix(f, "'")) {
			t.Errorf("unquoted shell metacharacters in %s", f)
		}
	}
	if strings.Contains(out, "proto=rtmp|hls") {
		t.Error("the banner still shows proto=rtmp|hls|dash")
	}
	requireTool(t, "sh")
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "'http") {
			got, err := exec.Command("sh", "-c", "printf %s "+f).Output()
			if err != nil || string(got) != strings.Trim(f, "'") {
				t.Errorf("sh: %q → %q, %v", f, got, err)
			}
		}
	}
}

package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/loadtest/httpswarm"
)

// protoMbps is the Mbit/s of proto in pl.
func protoMbps(pl []bus.ProtocolLoad, proto string) float64 {
	for _, p := range pl {
		if p.Protocol == proto {
			return p.Mbps
		}
	}
	return 0
}

// TestHTTPSwarmCounts: `relaymesh loadtest hls` with 50 players naming
// their sessions (--session) against one relay: the relay's
// /api/v1/streams, the mesh API and the relay's metrics count the 50 HLS
// viewers and their Mbit/s, about what the players received. The same at
// 1,000 players is a command in docs/performance.md (HTTP viewers at
// 1,000), too big for make test.
func TestHTTPSwarmCounts(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	const players = 50
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const stream = "live/swarm"
	_, ctl, mv := startLiveScaleMesh(ctx, t, stream, 80*time.Second, 400)
	c := ctl.web
	relayURL := relayHTTPURL(t, mv, "relay-na")
	type result struct {
		r   *httpswarm.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := httpswarm.Run(ctx, httpswarm.Config{URL: relayURL + "/hls/" + stream + "/index.m3u8",
			Clients: players, Ramp: 2 * time.Second, Duration: 25 * time.Second, LowLatency: httpswarm.LLOff, Session: true})
		done <- result{r, err}
	}()
	var hls, mesh int
	var hlsMbps, meshMbps float64
	waitFor(t, "the relay and the mesh to count the players", 20*time.Second, func() bool {
		v, ok := streamView(t, relayURL, stream)
		if !ok {
			return false
		}
		hls, hlsMbps = protoViewers(v.Protocols, bus.ProtoHLS), protoMbps(v.Protocols, bus.ProtoHLS)
		for _, r := range c.mesh().Relays {
			if r.ID == "relay-na" {
				mesh, meshMbps = protoViewers(r.Protocols, bus.ProtoHLS), protoMbps(r.Protocols, bus.ProtoHLS)
			}
		}
		return hls == players && mesh == players && hlsMbps > 0 && meshMbps > 0
	})
	// The rate once every player is well into its run.
	time.Sleep(10 * time.Second)
	if v, ok := streamView(t, relayURL, stream); ok {
		hls, hlsMbps = protoViewers(v.Protocols, bus.ProtoHLS), protoMbps(v.Protocols, bus.ProtoHLS)
	}
	for _, r := range c.mesh().Relays {
		if r.ID == "relay-na" {
			mesh, meshMbps = protoViewers(r.Protocols, bus.ProtoHLS), protoMbps(r.Protocols, bus.ProtoHLS)
		}
	}
	if hls != players || mesh != players {
		t.Errorf("HLS viewers: relay %d, mesh %d, want %d", hls, mesh, players)
	}
	resp, err := http.Get(relayURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metric := func(name string) float64 {
		re := regexp.MustCompile(name + `\{app="live",protocol="hls",stream="swarm"\} (\S+)`)
		sm := re.FindSubmatch(body)
		if sm == nil {
			t.Fatalf("/metrics lacks %s for hls", name)
		}
		f, _ := strconv.ParseFloat(string(sm[1]), 64)
		return f
	}
	if n := metric("relaymesh_viewers"); n != players {
		t.Errorf("relaymesh_viewers{protocol=hls} %v, want %d", n, players)
	}
	if mb := metric("relaymesh_viewers_mbps"); mb <= 0 {
		t.Errorf("relaymesh_viewers_mbps{protocol=hls} %v", mb)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	// What the players received against what the relay said it sent: the
	// same order (the relay's figure is a one-second window, the players'
	// a mean over their run, playlists not counted).
	recv := res.r.All.MeanMbps * players
	t.Logf("%d HLS viewers counted by the relay and the mesh; relay %.1f Mbit/s, mesh %.1f Mbit/s, players received %.1f Mbit/s", hls, hlsMbps, meshMbps, recv)
	if hlsMbps < recv/3 || hlsMbps > recv*3 {
		t.Errorf("the relay reports %.1f Mbit/s of HLS, the players received %.1f", hlsMbps, recv)
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/serve"
	"github.com/relaymesh/relaymesh/topology/orchestrator"
)

// httpAudience polls a playlist (and, for HLS, the first media playlist of
// the multivariant one) every 500 ms until ctx ends, as a player reloading
// its playlists does.
func httpAudience(ctx context.Context, url string) {
	get := func(u string) string {
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return ""
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return string(b)
	}
	base := url[:strings.LastIndexByte(url, '/')+1]
	for ctx.Err() == nil {
		body := get(url)
		if strings.HasSuffix(url, ".m3u8") {
			for _, l := range strings.Split(body, "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					get(base + l)
					break
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// streamView is what a server's /api/v1/streams says of stream.
func streamView(t *testing.T, httpURL, stream string) (serve.StreamView, bool) {
	t.Helper()
	resp, err := http.Get(httpURL + "/api/v1/streams")
	if err != nil {
		return serve.StreamView{}, false
	}
	defer resp.Body.Close()
	var out struct {
		Streams []serve.StreamView `json:"streams"`
	}
	if json.NewDecoder(resp.Body).Decode(&out) != nil {
		return serve.StreamView{}, false
	}
	for _, s := range out.Streams {
		if s.App+"/"+s.Name == stream {
			return s, true
		}
	}
	return serve.StreamView{}, false
}

func protoViewers(pl []bus.ProtocolLoad, proto string) int {
	for _, p := range pl {
		if p.Protocol == proto {
			return p.Viewers
		}
	}
	return 0
}

// TestHTTPViewersKeepRelaysOpen: an HLS-only audience on relay-na and a
// DASH-only audience on relay-as are viewers: the relays' /api/v1/streams,
// the mesh API and the relays' metrics count them, and the orchestrator,
// which closes an empty relay within seconds here, keeps both open for as
// long as they watch. Once they leave, the relays are closed; an HTTP
// viewer who comes back to the closed relay makes it pull again (its
// playlist moves on instead of freezing).
func TestHTTPViewersKeepRelaysOpen(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const stream = "live/http"
	_, ctl, mv := startLiveScaleMesh(ctx, t, stream, 80*time.Second, 400)
	c := ctl.web
	mv = c.buildDemand(stream, []string{ipUS, ipJP}, "relay-na", "relay-as")
	relayHTTP := map[string]string{}
	for _, r := range mv.Relays {
		relayHTTP[r.ID] = r.HTTPURL
	}
	actx, stopAudience := context.WithCancel(ctx)
	defer stopAudience()
	go httpAudience(actx, relayHTTP["relay-na"]+"/hls/"+stream+"/index.m3u8")
	go httpAudience(actx, relayHTTP["relay-as"]+"/dash/"+stream+"/manifest.mpd")

	for id, proto := range map[string]string{"relay-na": bus.ProtoHLS, "relay-as": bus.ProtoDASH} {
		waitFor(t, proto+" viewers on "+id, 15*time.Second, func() bool {
			v, ok := streamView(t, relayHTTP[id], stream)
			return ok && v.Viewers >= 1 && protoViewers(v.Protocols, proto) >= 1 && protoViewers(v.Protocols, bus.ProtoRTMP) == 0
		})
		waitFor(t, "the mesh to count "+id+"'s "+proto+" viewers", 10*time.Second, func() bool {
			for _, r := range c.mesh().Relays {
				if r.ID == id && r.Viewers >= 1 && protoViewers(r.Protocols, proto) >= 1 {
					return true
				}
			}
			return false
		})
		resp, err := http.Get(relayHTTP[id] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := `relaymesh_viewers{app="live",protocol="` + proto + `",stream="http"} 1`
		if !strings.Contains(string(body), want) {
			t.Errorf("%s /metrics lacks %s", id, want)
		}
	}
	// An empty relay is drained after 1 s below the watermark and closed
	// at once: 12 s of watching is plenty of time for a wrong close. The
	// decisions that count are those taken from here on, under the viewers:
	// on a busy machine a relay opened by the demand may stay empty for
	// that second before the viewers come, and be drained and opened again.
	watching := time.Now()
	time.Sleep(12 * time.Second)
	for _, id := range []string{"relay-na", "relay-as"} {
		if decidedSince(ctl.o, watching, "drain", id) || decidedSince(ctl.o, watching, "close", id) {
			t.Errorf("%s drained or closed under its HTTP viewers: %+v", id, ctl.o.Decisions())
		}
		if v, ok := streamView(t, relayHTTP[id], stream); !ok || !v.Live {
			t.Errorf("%s no longer carries %s live: %+v", id, stream, v)
		}
	}
	stopAudience()
	waitFor(t, "relay-na to close once its viewers left", 30*time.Second, func() bool {
		return decidedSince(ctl.o, watching, "close", "relay-na")
	})

	// Back on the closed relay, an HLS viewer gets a live playlist again.
	// The close is decided before the relay carries it out, and ending
	// closes the segment in progress: a playlist read at the decision may
	// move on by itself, with no new pull (this test failed so under a
	// loaded suite). So the ended playlist (EXT-X-ENDLIST) comes first,
	// then a live one that moves on.
	media := relayHTTP["relay-na"] + "/hls/" + stream + "/full.m3u8"
	playlist := func() (last string, ended bool) {
		resp, err := http.Get(media)
		if err != nil {
			return "", false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", false
		}
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "#EXTINF") || (l != "" && !strings.HasPrefix(l, "#")) {
				last = l
			}
		}
		return last, strings.Contains(string(b), "#EXT-X-ENDLIST")
	}
	waitFor(t, "the closed relay's playlist to end", 15*time.Second, func() bool { _, ended := playlist(); return ended })
	var first string
	waitFor(t, "a live playlist on the closed relay", 20*time.Second, func() bool {
		last, ended := playlist()
		first = last
		return !ended && strings.HasSuffix(last, ".m4s")
	})
	waitFor(t, "the playlist to move on", 15*time.Second, func() bool {
		last, ended := playlist()
		return !ended && last != "" && last != first
	})
	waitFor(t, "relay-na to pull "+stream+" again", 10*time.Second, func() bool {
		v, ok := streamView(t, relayHTTP["relay-na"], stream)
		return ok && v.Live
	})
}

// TestDASHThroughRedirector: ffmpeg plays a stream's DASH through the
// redirector's /play, from an MPD with relative URLs (no steering here),
// and HLS the same way.
func TestDASHThroughRedirector(t *testing.T) {
	t.Parallel()
	requireTool(t, "ffmpeg")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := startTestMesh(t)
	ctl := m.startControl(ctx, "orch")
	c := ctl.web
	mv := c.waitRelaysUp(4)
	const stream = "live/viaplay"
	startPublisher(t, "rtmp://"+m.primary+"/"+stream, 40*time.Second, 400)
	waitLiveAt(t, mv.Primary.HTTPURL, stream)
	for _, proto := range []string{"dash", "hls"} {
		url := c.web + "/play/" + stream + "?proto=" + proto + "&ip=" + ipDE
		fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
		cmd := exec.CommandContext(fctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-i", url, "-t", "3", "-f", "null", "-")
		out, err := cmd.CombinedOutput()
		fcancel()
		if err != nil {
			t.Errorf("ffmpeg %s through /play: %v\n%s", proto, err, out)
		}
	}
}

// decidedSince reports whether o took a decision with action on server at
// or after t.
func decidedSince(o *orchestrator.Orchestrator, t time.Time, action, server string) bool {
	return slices.ContainsFunc(o.Decisions(), func(d orchestrator.Decision) bool {
		return d.Action == action && d.Server == server && !d.Time.Before(t)
	})
}

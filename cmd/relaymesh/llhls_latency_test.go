package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dashmpd "github.com/Eyevinn/dash-mpd/mpd"
	"github.com/Eyevinn/mp4ff/mp4"
	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
)

// The latency tests measure how far behind the publisher a low-latency HLS
// or DASH client of a relay two hops from the primary (primary → r1 → r2)
// is. ffmpeg publishes in real time (-re) to the primary, its timestamps
// tied to the wall clock (startPublisherAt): the frame with RTMP timestamp
// t was made at start + t, so "behind the publisher" is from the moment a
// frame was made (glass) to the moment a client has it, ffmpeg's encoding
// included and its start-up left out (before, t counted from ffmpeg's
// launch, and its ~0.2 s start-up was in every figure). They take about
// half a minute each, so they run only when asked:
//
//	RELAYMESH_LATENCY=1 go test -run 'TestLLHLSLatency|TestLLDASHLatency' -v ./cmd/relaymesh/
//
// RELAYMESH_LATENCY_SECONDS sets the measuring time (default 20). players
// is how many browser players the test runs one after the other: the
// publisher runs long enough for each to take all of playerRunMax (a
// stream that ends under a player is a stall of the rest of its run, not
// the player's).
// latencyEnv is the integer the environment variable name sets, def when
// it is unset; a value that is not an integer from lo to hi fails the test.
func latencyEnv(t *testing.T, name string, def, lo, hi int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		t.Fatalf("%s=%q: want %d to %d", name, s, lo, hi)
	}
	return n
}

func latencySetup(t *testing.T, players int) (m *mesh, start time.Time, measure time.Duration) {
	t.Helper()
	if os.Getenv("RELAYMESH_LATENCY") == "" {
		t.Skip("set RELAYMESH_LATENCY=1 to measure the LL-HLS and LL-DASH latency (about half a minute each)")
	}
	requireTool(t, "ffmpeg")
	measure = time.Duration(latencyEnv(t, "RELAYMESH_LATENCY_SECONDS", 20, 1, 600)) * time.Second
	// primary → r1 → r2, r2 with low-latency DASH for the app.
	cfg := filepath.Join(t.TempDir(), "relay.yaml")
	// RELAYMESH_LATENCY_PART sets r2's hls.part_target (default the
	// packager's, 200ms).
	yaml := "hls:\n  dash_low_latency: [live]\n"
	if s := os.Getenv("RELAYMESH_LATENCY_PART"); s != "" {
		if d, err := time.ParseDuration(s); err != nil || d < 50*time.Millisecond || d > time.Second {
			t.Fatalf("RELAYMESH_LATENCY_PART=%q: want a duration from 50ms to 1s", s)
		}
		yaml += "  part_target: " + s + "\n"
	}
	// RELAYMESH_LATENCY_HOLD_BACK sets r2's hls.part_hold_back (default 3
	// part targets).
	if s := os.Getenv("RELAYMESH_LATENCY_HOLD_BACK"); s != "" {
		if f, err := strconv.ParseFloat(s, 64); err != nil || f < 2 || f > 10 {
			t.Fatalf("RELAYMESH_LATENCY_HOLD_BACK=%q: want a number of part targets from 2 to 10", s)
		}
		yaml += "  part_hold_back: " + s + "\n"
	}
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	m = &mesh{}
	m.primary = startNode(t, runPrimary, "", "--publish-key", "cam=s3cret")
	m.r1 = startNode(t, runRelay, "", "--id", "r1", "--location", "eu", "--upstream", "rtmp://"+m.primary.rtmp)
	m.r2 = startNode(t, runRelay, "", "--config", cfg, "--id", "r2", "--location", "eu", "--upstream", "rtmp://"+m.r1.rtmp)
	// The encoder's GOP: 1 s unless RELAYMESH_LATENCY_GOP says (seconds,
	// 1 or 2). A player must start on a keyframe (an independent part),
	// so where within the GOP it starts sets how far behind its target it
	// plays (docs/performance.md).
	gop := 25 * latencyEnv(t, "RELAYMESH_LATENCY_GOP", 1, 1, 2)
	// The video bitrate: 1500 kbit/s unless RELAYMESH_LATENCY_KBPS says.
	kbps := latencyEnv(t, "RELAYMESH_LATENCY_KBPS", 1500, 100, 20000)
	// The publisher's frames carry their wall-clock capture time (less
	// start) as their timestamps, so a part's end in media time is when
	// its last frame was made, on the test's clock.
	start = time.Now()
	startPublisherAt(t, m.publishURL(), measure+30*time.Second+time.Duration(players)*playerRunMax, kbps, gop, start)
	waitLive(t, m.primary, "live", "cam")
	return m, start, measure
}

// TestLLHLSLatency: the client behaves as a player at the live edge: a
// blocking playlist reload for the next part (_HLS_msn, _HLS_part), then
// that part; when the part's bytes are in, the latency is now − (start +
// the part's end in media time, from its tfdt and sample durations). It
// also reports now − the part's end by EXT-X-PROGRAM-DATE-TIME (the relay's
// clock when the segment began), the figure a player shows.
func TestLLHLSLatency(t *testing.T) {
	m, start, measure := latencySetup(t, 0)
	base := "http://" + m.r2.http + "/hls/live/cam/"
	c := &llClient{t: t, base: base}
	var pl *playlist.Media
	waitFor(t, "the full playlist", 20*time.Second, func() bool {
		var err error
		pl, err = c.playlist("full.m3u8")
		return err == nil && pl.PartInf != nil
	})
	init := c.get(pl.Map.URI)

	var edge, pdt []time.Duration
	deadline := time.Now().Add(measure)
	for time.Now().Before(deadline) {
		// The next part after the newest listed one, as a player asks for it.
		msn, part := nextPart(pl)
		next, err := c.playlist("full.m3u8?_HLS_msn=" + strconv.Itoa(msn) + "&_HLS_part=" + strconv.Itoa(part))
		if err != nil {
			t.Fatal(err)
		}
		pl = next
		uri, pdtEnd := newestPart(pl)
		if uri == "" {
			continue
		}
		body := c.get(uri)
		now := time.Now()
		end := mediaEnd(t, init, body)
		edge = append(edge, now.Sub(start.Add(end)))
		if !pdtEnd.IsZero() {
			pdt = append(pdt, now.Sub(pdtEnd))
		}
	}
	if len(edge) < 10 {
		t.Fatalf("only %d parts in %v", len(edge), measure)
	}
	// A player's first load (no _HLS_msn) at a moment of its own: how old
	// its newest part is when it arrives, by PROGRAM-DATE-TIME. A player
	// starts PART-HOLD-BACK behind that edge and keeps the distance, so
	// this age adds to its latency for good. Each load is a player of its
	// own (a session): repeated from one client, they are polls.
	var first []time.Duration
	for i := range 20 {
		time.Sleep(time.Duration(37+i*53%250) * time.Millisecond) // spread over a part's phases
		p, err := c.playlist("full.m3u8?session=first-" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, end := newestPart(p); !end.IsZero() {
			first = append(first, time.Since(end))
		}
	}
	t.Logf("LL-HLS on a relay two hops from the primary, %d parts over %v, PART-TARGET %v, PART-HOLD-BACK %v",
		len(edge), measure, pl.PartInf.PartTarget, *pl.ServerControl.PartHoldBack)
	t.Logf("newest part received, behind the publisher (its frames' capture): %s", percentiles(edge))
	t.Logf("newest part received, behind its PROGRAM-DATE-TIME:       %s", percentiles(pdt))
	t.Logf("first load (no _HLS_msn): its newest part, behind its PROGRAM-DATE-TIME: %s", percentiles(first))
	hold := *pl.ServerControl.PartHoldBack
	t.Logf("a player playing PART-HOLD-BACK behind the edge: p50 %v", (quantile(edge, 0.5) + hold).Round(time.Millisecond))
	if p99 := quantile(edge, 0.99); p99+hold > 3*time.Second {
		t.Errorf("p99 %v + PART-HOLD-BACK %v is over the 3 s target", p99, hold)
	}
}

// TestLLDASHLatency: the client behaves as a low-latency DASH player at the
// live edge: it reads the manifest, asks for the segment in progress (the
// last of full's timeline, available availabilityTimeOffset early) and
// reads it as it is streamed, chunk by chunk (moof+mdat). For each chunk
// in, the latency is now − (start + the chunk's end in media time), and
// now − the chunk's end by the DASH wall clock (availabilityStartTime +
// Period@start + media time − presentationTimeOffset), the figure a player
// synchronised by UTCTiming shows. The segment in progress when the client
// comes is not counted (its first chunks are as old as the segment).
func TestLLDASHLatency(t *testing.T) {
	m, start, measure := latencySetup(t, 0)
	c := &llClient{t: t, base: "http://" + m.r2.http + "/dash/live/cam/"}
	var mpd *dashmpd.MPD
	var tmpl *dashmpd.SegmentTemplateType
	waitFor(t, "a low-latency manifest", 20*time.Second, func() bool {
		b, err := c.fetch("manifest.mpd")
		if err != nil {
			return false
		}
		mpd, err = dashmpd.MPDFromBytes(b)
		if err != nil || len(mpd.Periods) == 0 {
			return false
		}
		tmpl = fullTemplate(mpd)
		return tmpl != nil && tmpl.AvailabilityTimeOffset > 0
	})
	init := c.get(strings.ReplaceAll(tmpl.Initialization, "$RepresentationID$", "full"))
	t.Logf("LL-DASH: availabilityTimeOffset %v, latency target %d ms", float64(tmpl.AvailabilityTimeOffset), *mpd.ServiceDescription[0].Latencies[0].Target)

	var edge, wall []time.Duration
	deadline := time.Now().Add(measure)
	var done uint64 // the last segment read
	first := true
	for time.Now().Before(deadline) {
		b, err := c.fetch("manifest.mpd")
		if err != nil {
			t.Fatal(err)
		}
		if mpd, err = dashmpd.MPDFromBytes(b); err != nil {
			t.Fatal(err)
		}
		period := mpd.Periods[len(mpd.Periods)-1]
		tmpl = fullTemplate(mpd)
		last := tmpl.SegmentTimeline.S[len(tmpl.SegmentTimeline.S)-1]
		segT := *last.T + last.D*uint64(last.R)
		if segT <= done {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		done = segT
		ast, err := time.Parse(time.RFC3339Nano, string(mpd.AvailabilityStartTime))
		if err != nil {
			t.Fatal(err)
		}
		ts := time.Duration(*tmpl.Timescale)
		origin := ast.Add(time.Duration(*period.Start)).Add(-time.Duration(*tmpl.PresentationTimeOffset) * time.Second / ts)
		uri := strings.NewReplacer("$RepresentationID$", "full", "$Time$", strconv.FormatUint(segT, 10)).Replace(tmpl.Media)
		warmup := first // the segment in progress when the client came: its first chunks are old
		first = false
		c.chunks(uri, func(chunk []byte) {
			if warmup {
				return
			}
			now := time.Now()
			end := mediaEnd(t, init, chunk)
			edge = append(edge, now.Sub(start.Add(end)))
			wall = append(wall, now.Sub(origin.Add(end)))
		})
	}
	if len(edge) < 10 {
		t.Fatalf("only %d chunks in %v", len(edge), measure)
	}
	t.Logf("LL-DASH on a relay two hops from the primary, %d chunks over %v", len(edge), measure)
	t.Logf("newest chunk received, behind the publisher (its frames' capture): %s", percentiles(edge))
	t.Logf("newest chunk received, behind the DASH wall clock:         %s", percentiles(wall))
	target := time.Duration(*mpd.ServiceDescription[0].Latencies[0].Target) * time.Millisecond
	t.Logf("a player at the manifest's latency target is %v behind the wall clock; the chunks are %v behind it (p99)", target, quantile(wall, 0.99).Round(time.Millisecond))
	if p99 := quantile(wall, 0.99); p99 > target {
		t.Errorf("p99 %v behind the wall clock: a player at the %v target would stall", p99, target)
	}
}

// fullTemplate returns the SegmentTemplate of the full representation.
func fullTemplate(mpd *dashmpd.MPD) *dashmpd.SegmentTemplateType {
	p := mpd.Periods[len(mpd.Periods)-1]
	for _, as := range p.AdaptationSets {
		for _, r := range as.Representations {
			if r.Id == "full" && r.SegmentTemplate != nil {
				return r.SegmentTemplate
			}
		}
	}
	return nil
}

// chunks reads a segment as it is streamed and calls fn with each
// moof+mdat chunk as soon as it is complete.
func (c *llClient) chunks(path string, fn func([]byte)) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	var chunk []byte
	hdr := make([]byte, 8)
	for {
		if _, err := io.ReadFull(resp.Body, hdr); err != nil {
			return
		}
		size := int(binary.BigEndian.Uint32(hdr))
		if size < 8 || size > 32<<20 {
			c.t.Fatalf("%s: box of %d bytes", path, size)
		}
		box := make([]byte, size)
		copy(box, hdr)
		if _, err := io.ReadFull(resp.Body, box[8:]); err != nil {
			return
		}
		chunk = append(chunk, box...)
		if string(hdr[4:8]) == "mdat" {
			fn(chunk)
			chunk = nil
		}
	}
}

// llClient fetches a relay's LL-HLS files.
type llClient struct {
	t    *testing.T
	base string
	hc   http.Client
}

func (c *llClient) fetch(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return b, err
}

func (c *llClient) get(path string) []byte {
	c.t.Helper()
	b, err := c.fetch(path)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func (c *llClient) playlist(path string) (*playlist.Media, error) {
	b, err := c.fetch(path)
	if err != nil {
		return nil, err
	}
	var pl playlist.Media
	if err := pl.Unmarshal(b); err != nil {
		return nil, err
	}
	return &pl, nil
}

// nextPart returns the media sequence number and part index of the part after
// the newest one listed.
func nextPart(pl *playlist.Media) (msn, part int) {
	return pl.MediaSequence + len(pl.Segments), len(pl.Parts)
}

// newestPart returns the URI of the newest part listed and the wall-clock
// time of its end by the playlist's PROGRAM-DATE-TIME (zero without one).
func newestPart(pl *playlist.Media) (string, time.Time) {
	var uri string
	var parts []*playlist.MediaPart
	switch {
	case len(pl.Parts) > 0:
		parts = pl.Parts
	case len(pl.Segments) > 0:
		parts = pl.Segments[len(pl.Segments)-1].Parts
	}
	if len(parts) > 0 {
		uri = parts[len(parts)-1].URI
	}
	if len(pl.Segments) == 0 || pl.Segments[0].DateTime == nil {
		return uri, time.Time{}
	}
	end := *pl.Segments[0].DateTime
	for _, s := range pl.Segments {
		end = end.Add(s.Duration)
	}
	for _, p := range pl.Parts {
		end = end.Add(p.Duration)
	}
	return uri, end
}

// mediaEnd returns the end of a part's last sample in media time (the RTMP
// clock, which starts at 0 with ffmpeg).
func mediaEnd(t *testing.T, init, part []byte) time.Duration {
	t.Helper()
	f, err := mp4.DecodeFile(bytes.NewReader(append(slices.Clip(init), part...)))
	if err != nil || f.Init == nil {
		t.Fatalf("decode part: %v", err)
	}
	var end uint64
	for _, s := range f.Segments {
		for _, fr := range s.Fragments {
			ss, err := fr.GetFullSamples(f.Init.Moov.Mvex.Trex)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range ss {
				end = max(end, x.DecodeTime+uint64(x.Dur))
			}
		}
	}
	ts := f.Init.Moov.Trak.Mdia.Mdhd.Timescale
	return time.Duration(end) * time.Second / time.Duration(ts)
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func percentiles(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	return fmt.Sprintf("min %v p50 %v p99 %v max %v (n=%d)",
		r(slices.Min(d)), r(quantile(d, 0.5)), r(quantile(d, 0.99)), r(slices.Max(d)), len(d))
}

// TestPlayerLatency plays the relay two hops from the primary with hls.js
// and dash.js in their default settings (headless Chromium, as in
// TestBrowserPlayers), and with Shaka Player when asked, and reports how
// far behind the live edge each plays (hls.js: its latency; dash.js: the
// wall clock, synchronised by UTCTiming, against the presentation time;
// Shaka Player: the wall clock against PROGRAM-DATE-TIME or the MPD's
// clock) over the second half of 20 s of playing.
// Add the edge's own delay behind the publisher (TestLLHLSLatency,
// TestLLDASHLatency: ~0.05 s for a part, ~0.13 s for a chunk) for glass
// to glass. It runs with the other latency tests:
//
//	RELAYMESH_LATENCY=1 go test -run TestPlayerLatency -v ./cmd/relaymesh/
func TestPlayerLatency(t *testing.T) {
	// RELAYMESH_LATENCY_PLAYERS lists the players to run, in order (default
	// "hls,dash"; "dash,dash,dash" runs dash.js three times on one mesh;
	// "shaka" is Shaka Player on the LL-HLS, "shaka-dash" on the DASH).
	players := []string{"hls", "dash"}
	if s := os.Getenv("RELAYMESH_LATENCY_PLAYERS"); s != "" {
		players = strings.Split(s, ",")
	}
	for _, p := range players {
		if !slices.Contains([]string{"hls", "dash", "shaka", "shaka-dash"}, p) {
			t.Fatalf("RELAYMESH_LATENCY_PLAYERS: %q is not hls, dash, shaka or shaka-dash", p)
		}
	}
	m, _, _ := latencySetup(t, len(players))
	root := repoRoot(t)
	requireBrowser(t, root)
	chromium, _ := exec.LookPath("chromium")
	base := "http://" + m.r2.http
	waitOK(t, "the multivariant playlist", base+"/hls/live/cam/index.m3u8", 20*time.Second)
	time.Sleep(4 * time.Second)
	hls, dash := base+"/hls/live/cam/index.m3u8", base+"/dash/live/cam/manifest.mpd"
	urls := map[string]string{"hls": hls, "dash": dash, "shaka": hls, "shaka-dash": dash}
	for i, player := range players {
		url := urls[player]
		r := playerLatency(t, root, chromium, player, url, i)
		t.Logf("%s (default settings) on the relay two hops away: %.2f s behind the live edge (p50), %.2f s at most; longest stall %d ms; on %.0f kbit/s",
			player, r.p50, r.max, r.maxStallMs, r.kbps)
	}
}

// playerRun is how far behind the live edge a player played over the
// second half of 20 s (run.mjs), by its own measure.
type playerRun struct {
	p50, max   float64
	maxStallMs int
	kbps       float64
}

// playerRunMax is the longest one playerLatency takes.
const playerRunMax = 90 * time.Second

// playerLatency plays url with player (hls, dash, shaka or shaka-dash, which
// is Shaka Player too) in headless Chromium,
// default settings unless RELAYMESH_HLS_CONFIG gives hls.js some.
// n numbers the console file of RELAYMESH_PLAYER_CONSOLE.
func playerLatency(t *testing.T, root, chromium, player, url string, n int) playerRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), playerRunMax)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(root, "packager", "browser", "run.mjs"),
		"--url", url, "--player", strings.TrimSuffix(player, "-dash"), "--chromium", chromium, "--play", "20")
	if cfg := os.Getenv("RELAYMESH_HLS_CONFIG"); cfg != "" && player == "hls" {
		// hls.js settings other than the defaults (the figures in
		// docs/performance.md say which).
		cmd.Args = append(cmd.Args, "--config", cfg)
	}
	if n := latencyEnv(t, "RELAYMESH_LATENCY_LINK_KBPS", 0, 100, 1000000); n > 0 {
		// An emulated link of that many kbit/s with no added delay: the
		// page's navigator.connection.downlink, from which Shaka Player
		// takes its first estimate, is then a desktop browser's (10000:
		// Chromium's cap) rather than headless Chromium's ~1.45 Mbit/s.
		cmd.Args = append(cmd.Args, "--link-kbps", strconv.Itoa(n), "--link-latency", "0")
	}
	if dir := os.Getenv("RELAYMESH_PLAYER_CONSOLE"); dir != "" && !strings.HasPrefix(player, "shaka") {
		// The page's console with the player's debug log, for a look.
		debug := `{"debug":true}`
		if player == "dash" {
			debug = `{"debug":{"logLevel":4}}` // info: its requests, buffer and catch-up
		}
		cmd.Args = append(cmd.Args, "--console", filepath.Join(dir, fmt.Sprintf("%s-%d.log", player, n)), "--config", debug)
	}
	out, err := cmd.Output()
	var r struct {
		OK   bool `json:"ok"`
		Play *struct {
			Advanced   float64 `json:"advanced"`
			MaxStallMs int     `json:"maxStallMs"`
			Latency    *struct {
				P50 float64 `json:"p50"`
				Max float64 `json:"max"`
			} `json:"latency"`
		} `json:"play"`
		Level *struct {
			Bitrate float64 `json:"bitrate"`
		} `json:"levelBeforeThrottle"`
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil || !r.OK || r.Play == nil || r.Play.Latency == nil {
		t.Fatalf("%s %s: %v %v\n%s", player, url, err, jerr, out)
	}
	run := playerRun{p50: r.Play.Latency.P50, max: r.Play.Latency.Max, maxStallMs: r.Play.MaxStallMs}
	if r.Level != nil {
		run.kbps = r.Level.Bitrate / 1000
	}
	return run
}

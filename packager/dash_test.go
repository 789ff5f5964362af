package packager

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/internal/av"
)

// TestManifestPeriodPerSession: a codec change mid-stream starts a new
// Period (its own init segments and timeline) after the one still listed.
func TestManifestPeriodPerSession(t *testing.T) {
	st := testStream(t, Config{})
	st.pushAll(synthGOPs(0, 4, true)) // segments 0-2 complete
	old := st.seg.sess.id
	st.seg.push(av.NewEvent(av.EventUnpublish, 8000))
	st.seg.push(video(8000, testAVCSeqSmall))
	st.pushAll(synthGOPs(8000, 3, false)) // segments 3 (old, cut short), 4, 5 complete
	sid := st.seg.sess.id

	periods := func() []*m.Period {
		t.Helper()
		b, err := st.manifest("http://relay.example", "/dash/"+st.app+"/"+st.name+"/")
		if err != nil {
			t.Fatal(err)
		}
		mpd, err := m.ReadFromString(string(b))
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		return mpd.Periods
	}
	ps := periods()
	if len(ps) != 2 || ps[0].Id != old || ps[1].Id != sid {
		t.Fatalf("%d periods", len(ps))
	}
	for k, want := range []struct {
		start    time.Duration
		width    uint32
		codec    string
		firstT   uint64
		segments int
	}{{0, 640, "avc1.64001e", 0, 4}, {8 * time.Second, 320, "avc1.42c00d", 8 * 90000, 2}} {
		p := ps[k]
		video := p.AdaptationSets[0]
		tl := video.SegmentTemplate.SegmentTimeline
		n := 0
		for _, s := range tl.S {
			n += 1 + s.R
		}
		if time.Duration(*p.Start) != want.start || video.MaxWidth != want.width || video.Representations[0].Codecs != want.codec ||
			*tl.S[0].T != want.firstT || n != want.segments || *video.SegmentTemplate.PresentationTimeOffset != want.firstT {
			t.Errorf("period %d: start %v, width %d, codecs %s, timeline from %d with %d segments", k,
				time.Duration(*p.Start), video.MaxWidth, video.Representations[0].Codecs, *tl.S[0].T, n)
		}
		if video.SegmentTemplate.Initialization != p.Id+"_$RepresentationID$_init.mp4" || len(p.AdaptationSets) != 2 {
			t.Errorf("period %d: init %s", k, video.SegmentTemplate.Initialization)
		}
	}
	// Once the old segments left the window, so did their period.
	st.pushAll(synthGOPs(14000, 6, false))
	if ps := periods(); len(ps) != 1 || ps[0].Id != sid {
		t.Fatalf("%d periods after the old segments left", len(ps))
	}
}

// TestManifestBaseURL: the manifest carries an absolute BaseURL of the node
// that serves it (from the configured public base URL, else
// X-Forwarded-Proto/Host, else the request's Host), so that a player that
// got the manifest through a redirect resolves segment URLs on this node;
// header values that are not a host are ignored.
func TestManifestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		public string
		host   string
		fwd    map[string]string
		want   string
	}{
		{"host", "", "relay1.example:8080", nil, "http://relay1.example:8080/dash/live/test/"},
		{"forwarded", "", "10.0.0.5:8080", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "edge.example, proxy.local"}, "https://edge.example/dash/live/test/"},
		{"bad forwarded host", "", "relay1.example", map[string]string{"X-Forwarded-Host": "evil.example/x<", "X-Forwarded-Proto": "gopher"}, "http://relay1.example/dash/live/test/"},
		{"bad host", "", "a b", nil, "http://localhost/dash/live/test/"},
		{"configured", "https://r1.example.net/", "10.0.0.5", map[string]string{"X-Forwarded-Host": "edge.example"}, "https://r1.example.net/dash/live/test/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, src, srv := testServer(t, Config{PublicBaseURL: tc.public})
			startStream(t, src, srv.URL)
			req, _ := http.NewRequest("GET", srv.URL+"/dash/live/test/manifest.mpd", nil)
			req.Host = tc.host
			for k, v := range tc.fwd {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mpd, err := m.MPDFromBytes(body)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %v\n%s", resp.StatusCode, err, body)
			}
			if len(mpd.BaseURL) != 1 || string(mpd.BaseURL[0].Value) != tc.want {
				t.Fatalf("BaseURL %v, want %s\n%s", mpd.BaseURL, tc.want, body)
			}
			base := strings.TrimSuffix(tc.want, "/dash/live/test/")
			if len(mpd.UTCTimings) != 1 || mpd.UTCTimings[0].Value != base+"/dash/time" {
				t.Fatalf("UTCTiming %+v, want %s/dash/time", mpd.UTCTimings[0], base)
			}
			if !strings.Contains(resp.Header.Get("Vary"), "X-Forwarded-Host") {
				t.Fatalf("Vary %q", resp.Header.Get("Vary"))
			}
		})
	}
}

// TestLowLatencyManifest: for an app with LowLatencyDASH the manifest is
// low-latency DASH: a ServiceDescription with a latency target and no
// maximum; full
// (written in chunks, its parts) and audio have availabilityTimeOffset,
// availabilityTimeComplete false and the segment in progress at the end of
// their timeline (lite and key, whole segments, keep the complete ones
// only). Other formats, and an ended stream, have none of it.
func TestLowLatencyManifest(t *testing.T) {
	for _, format := range []HLSFormat{HLSLowLatency, HLSFMP4} {
		t.Run(string(format), func(t *testing.T) {
			st := testStream(t, Config{Default: AppConfig{HLS: format, LowLatencyDASH: true}})
			st.pushAll(synthGOPs(0, 4, true))          // segments 0-2 complete, 3 in progress
			st.pushAll(synthGOPs(8000, 1, false)[:20]) // segment 3 complete, 4 in progress
			parse := func() *m.MPD {
				b, err := st.manifest("http://relay", "/dash/"+st.app+"/"+st.name+"/")
				if err != nil {
					t.Fatal(err)
				}
				mpd, err := m.MPDFromBytes(b)
				if err != nil {
					t.Fatalf("%v\n%s", err, b)
				}
				return mpd
			}
			mpd := parse()
			ll := format == HLSLowLatency
			if got := len(mpd.ServiceDescription) == 1 && *mpd.ServiceDescription[0].Latencies[0].Target == 1500; got != ll {
				t.Fatalf("ServiceDescription %+v", mpd.ServiceDescription)
			}
			if ll && mpd.ServiceDescription[0].Latencies[0].Max != nil {
				// dash.js seeks to the live point at max − target + 0.5 s
				// behind its target, aborting the chunked download that
				// would have measured a slower link (dash.go).
				t.Fatalf("ServiceDescription has a maximum latency of %d ms", *mpd.ServiceDescription[0].Latencies[0].Max)
			}
			video, audio := mpd.Periods[0].AdaptationSets[0], mpd.Periods[0].AdaptationSets[1]
			lastStart := func(tl *m.SegmentTimelineType) uint64 {
				last := tl.S[len(tl.S)-1]
				return *last.T + last.D*uint64(last.R)
			}
			full := video.Representations[0].SegmentTemplate
			if !ll {
				if full != nil || video.SegmentTemplate.AvailabilityTimeOffset != 0 || audio.SegmentTemplate.AvailabilityTimeOffset != 0 {
					t.Fatal("low-latency attributes in a manifest of format fmp4")
				}
				return
			}
			for _, tc := range []struct {
				name string
				tmpl *m.SegmentTemplateType
				cur  uint64 // start of the segment in progress, in the template's timescale
			}{
				{"full", full, 720000},
				{"audio", audio.SegmentTemplate, st.seg.cur.track(Audio).start},
			} {
				if tc.tmpl == nil || tc.tmpl.AvailabilityTimeOffset < 1 || tc.tmpl.AvailabilityTimeOffset > 1.9 ||
					tc.tmpl.AvailabilityTimeComplete == nil || *tc.tmpl.AvailabilityTimeComplete {
					t.Fatalf("%s: template %+v", tc.name, tc.tmpl)
				}
				if got := lastStart(tc.tmpl.SegmentTimeline); got != tc.cur {
					t.Fatalf("%s: the timeline's last segment starts at %d, want the one in progress at %d", tc.name, got, tc.cur)
				}
			}
			if got := lastStart(video.SegmentTemplate.SegmentTimeline); got != 540000 {
				t.Fatalf("lite and key: last segment at %d, want the last complete one at 540000", got)
			}
			if video.Representations[1].SegmentTemplate != nil || video.Representations[2].SegmentTemplate != nil {
				t.Fatal("lite or key has a template of its own")
			}
			st.end()
			if mpd := parse(); len(mpd.ServiceDescription) != 0 || mpd.Periods[0].AdaptationSets[0].Representations[0].SegmentTemplate != nil {
				t.Fatal("an ended stream's manifest is still low-latency")
			}
		})
	}
}

// TestLowLatencyDASHOptIn: without LowLatencyDASH an llhls app's manifest
// is plain live DASH (complete segments, no availabilityTimeOffset).
func TestLowLatencyDASHOptIn(t *testing.T) {
	st := testStream(t, Config{})
	st.pushAll(synthGOPs(0, 4, true))
	b, err := st.manifest("http://relay", "/dash/"+st.app+"/"+st.name+"/")
	if err != nil {
		t.Fatal(err)
	}
	mpd, err := m.MPDFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := mpd.Periods[0].AdaptationSets[0].SegmentTemplate
	if len(mpd.ServiceDescription) != 0 || tmpl.AvailabilityTimeOffset != 0 || tmpl.AvailabilityTimeComplete != nil {
		t.Fatalf("low-latency DASH without LowLatencyDASH:\n%s", b)
	}
}

// FuzzBaseURL: whatever the Host and X-Forwarded-* headers hold, the base
// written into manifests is http or https and a plain host[:port].
func FuzzBaseURL(f *testing.F) {
	f.Add("relay1.example:8080", "", "")
	f.Add("10.0.0.5", "edge.example, proxy", "https")
	f.Add("a b", "evil.example/x<", "gopher")
	f.Add("[::1]:8080", "", "HTTP")
	p, err := New(newPushSource(), Config{Logger: discardLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(p.Close)
	f.Fuzz(func(t *testing.T, host, fwdHost, fwdProto string) {
		r, _ := http.NewRequest("GET", "http://x/dash/live/test/manifest.mpd", nil)
		r.Host = host
		r.Header.Set("X-Forwarded-Host", fwdHost)
		r.Header.Set("X-Forwarded-Proto", fwdProto)
		base := p.baseURL(r)
		rest, ok := strings.CutPrefix(base, "http://")
		if !ok {
			rest, ok = strings.CutPrefix(base, "https://")
		}
		if !ok || !validHost(rest) {
			t.Fatalf("base %q from Host %q, X-Forwarded-Host %q, X-Forwarded-Proto %q", base, host, fwdHost, fwdProto)
		}
	})
}

// The manifest's BaseURL keeps the directory the client asked in (a token
// in the path, taken out by a middleware before the packager), and only
// that: anything else falls back to the stream's own directory.
func TestManifestDirKeepsRequestPath(t *testing.T) {
	for _, c := range []struct{ uri, want string }{
		{"/dash/live/cam/manifest.mpd", "/dash/live/cam/"},
		{"/dash/live/cam/t/1700000000.abc_DEF-1/manifest.mpd?x=1", "/dash/live/cam/t/1700000000.abc_DEF-1/"},
		{"/dash/live/other/manifest.mpd", "/dash/live/cam/"},
		{"/dash/live/cam/t/x/segment.m4s", "/dash/live/cam/"},
		{"/dash/live/cam/t/x/number.mpd", "/dash/live/cam/t/x/"},
		{"/dash/live/cam/t/a\"b/manifest.mpd", "/dash/live/cam/"},
		{"", "/dash/live/cam/"},
	} {
		r := httptest.NewRequest("GET", "/dash/live/cam/manifest.mpd", nil)
		r.RequestURI = c.uri
		if got := manifestDir(r, "live", "cam"); got != c.want {
			t.Errorf("%q: %q, want %q", c.uri, got, c.want)
		}
	}
}

// TestDASHStartWaitsForWindow: the first MPD request of a young stream
// waits until its segments cover the suggestedPresentationDelay the MPD
// asks for (two 2 s segments for 4 s), so that a player can start that far
// behind the live edge instead of at it.
func TestDASHStartWaitsForWindow(t *testing.T) {
	src, srv := waitingServer(t)
	type answer struct {
		status int
		body   []byte
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/dash/live/test/manifest.mpd")
		if err != nil {
			got <- answer{}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{resp.StatusCode, b}
	}()
	sub := src.current(t)
	sub.push(synthGOPs(0, 1, true)...)
	sub.push(video(2000, keyframe(5000))) // one complete segment: 2 s
	select {
	case a := <-got:
		t.Fatalf("answered with one segment of 2 s (delay 4 s): %d\n%s", a.status, a.body)
	case <-time.After(500 * time.Millisecond):
	}
	sub.push(afterKeyframe(synthGOPs(2000, 1, false))...)
	sub.push(video(4000, keyframe(5000))) // two: 4 s
	var a answer
	select {
	case a = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no MPD once the window covered the delay")
	}
	mpd, err := m.MPDFromBytes(a.body)
	if err != nil || a.status != 200 {
		t.Fatalf("%d %v\n%s", a.status, err, a.body)
	}
	if mpd.Type == nil || *mpd.Type != "dynamic" || mpd.SuggestedPresentationDelay == nil {
		t.Fatalf("not a live MPD with a delay:\n%s", a.body)
	}
	if d := time.Duration(*mpd.SuggestedPresentationDelay); d != 4*time.Second {
		t.Fatalf("suggestedPresentationDelay %v, want 4s", d)
	}
	if window := time.Duration(*mpd.TimeShiftBufferDepth); window < 4*time.Second {
		t.Fatalf("window %v listed, below the delay", window)
	}
}

// TestDASHStartWaitsOnce: once a stream's MPD was served, later requests do
// not wait for the window, even when it no longer covers the delay (a
// segment longer than the others raised it).
func TestDASHStartWaitsOnce(t *testing.T) {
	src, srv := waitingServer(t)
	get := func() (int, time.Duration) {
		start := time.Now()
		resp, err := http.Get(srv.URL + "/dash/live/test/manifest.mpd")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	done := make(chan struct{})
	go func() { defer close(done); get() }()
	sub := src.current(t)
	sub.push(synthGOPs(0, 2, true)...)
	sub.push(video(4000, keyframe(5000))) // two segments of 2 s: the 4 s delay covered
	<-done
	// A segment of 8 s: the delay the MPD asks for becomes 16 s, more than
	// the window holds; the next request is answered at once all the same.
	var long []*av.Frame
	for _, f := range afterKeyframe(synthGOPs(4000, 4, false)) {
		if f.Kind == av.KindVideo && f.Keyframe {
			f = video(f.Timestamp, interframe(1500)) // one GOP of 8 s
		}
		long = append(long, f)
	}
	sub.push(long...)
	sub.push(video(12000, keyframe(5000)))
	waitPlaylist(t, srv.URL+"/hls/live/test/full.m3u8", "#EXTINF:8.0")
	if status, took := get(); status != 200 || took > 2*time.Second {
		t.Fatalf("second MPD request: %d after %v", status, took)
	}
}

// afterKeyframe is frames without their first keyframe (the test pushed
// it already, closing the segment before).
func afterKeyframe(frames []*av.Frame) []*av.Frame {
	for i, f := range frames {
		if f.Kind == av.KindVideo && f.Keyframe {
			return append(frames[:i:i], frames[i+1:]...)
		}
	}
	return frames
}

// waitPlaylist polls a playlist until it contains want.
func waitPlaylist(t *testing.T, url, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), want) {
			return
		}
	}
	t.Fatalf("%s never listed %q", url, want)
}

// waitingServer is a packager with the default first-MPD wait (testServer
// turns it off), MaxWait 10 s, and its HTTP server.
func waitingServer(t *testing.T) (*pushSource, *httptest.Server) {
	t.Helper()
	src := newPushSource()
	p, err := New(src, Config{Logger: discardLogger(), Registerer: prometheus.NewRegistry(), MaxWait: 10 * time.Second, EndGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() { srv.Close(); p.Close() })
	return src, srv
}

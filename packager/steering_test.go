package packager

import (
	"bytes"
	"strings"
	"testing"

	m "github.com/Eyevinn/dash-mpd/mpd"
	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
)

func steeringConfig() Config {
	return Config{Steering: func(app, name string) *Steering {
		if name != "test" {
			return nil
		}
		return &Steering{Pathway: "relay-na",
			HLS:  "http://steer.example:8080/steer/hls/" + app + "/" + name + "?base=relay-na",
			DASH: "http://steer.example:8080/steer/dash/" + app + "/" + name + "?base=relay-na"}
	}}
}

func TestSteeringInMultivariant(t *testing.T) {
	_, src, srv := testServer(t, steeringConfig())
	startStream(t, src, srv.URL)
	_, body := get(t, srv.Client(), srv.URL+"/hls/live/test/index.m3u8")
	s := string(body)
	if !strings.Contains(s, "#EXT-X-CONTENT-STEERING:SERVER-URI=\"http://steer.example:8080/steer/hls/live/test?base=relay-na\",PATHWAY-ID=\"relay-na\"\n") {
		t.Fatalf("no steering tag:\n%s", s)
	}
	if strings.Index(s, "#EXT-X-CONTENT-STEERING") > strings.Index(s, "#EXT-X-STREAM-INF") {
		t.Errorf("steering tag after the variants:\n%s", s)
	}
	variants := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "#EXT-X-STREAM-INF:") {
			variants++
			if !strings.Contains(l, `PATHWAY-ID="relay-na"`) || !strings.Contains(l, `STABLE-VARIANT-ID="`) {
				t.Errorf("variant without pathway or stable id: %s", l)
			}
		}
		if strings.HasPrefix(l, "#EXT-X-MEDIA:") && !strings.Contains(l, `STABLE-RENDITION-ID="audio"`) {
			t.Errorf("rendition without stable id: %s", l)
		}
	}
	if variants == 0 || !strings.Contains(s, `STABLE-VARIANT-ID="full"`) {
		t.Fatalf("variants:\n%s", s)
	}
	// The playlist still parses, with the same variants.
	pl, err := playlist.Unmarshal(body)
	if err != nil {
		t.Fatalf("playlist with steering does not parse: %v", err)
	}
	if mv, ok := pl.(*playlist.Multivariant); !ok || len(mv.Variants) != variants {
		t.Fatalf("parsed %T %+v", pl, pl)
	}
}

func TestSteeringInMPD(t *testing.T) {
	_, src, srv := testServer(t, steeringConfig())
	startStream(t, src, srv.URL)
	_, body := get(t, srv.Client(), srv.URL+"/dash/live/test/manifest.mpd")
	mpd, err := m.ReadFromString(string(body))
	if err != nil {
		t.Fatal(err)
	}
	cs := mpd.ContentSteering
	if cs == nil || cs.DefaultServiceLocation != "relay-na" || cs.Value != "http://steer.example:8080/steer/dash/live/test?base=relay-na" {
		t.Fatalf("content steering %+v\n%s", cs, body)
	}
	dir := srv.URL + "/dash/live/test/"
	if len(mpd.BaseURL) != 1 || string(mpd.BaseURL[0].Value) != dir || mpd.BaseURL[0].ServiceLocation != "relay-na" {
		t.Fatalf("base URLs %+v", mpd.BaseURL)
	}
	if len(mpd.Location) != 1 || mpd.Location[0].Value != dir+"manifest.mpd" || mpd.Location[0].ServiceLocation != "relay-na" {
		t.Fatalf("locations %+v", mpd.Location)
	}
	if !bytes.Contains(body, []byte("?base=relay-na</ContentSteering>")) {
		t.Errorf("steering URL escaped oddly:\n%s", body)
	}
}

func TestNoSteeringWithoutConfig(t *testing.T) {
	_, src, srv := testServer(t, Config{})
	startStream(t, src, srv.URL)
	_, hls := get(t, srv.Client(), srv.URL+"/hls/live/test/index.m3u8")
	_, mpd := get(t, srv.Client(), srv.URL+"/dash/live/test/manifest.mpd")
	if bytes.Contains(hls, []byte("PATHWAY-ID")) || bytes.Contains(mpd, []byte("ContentSteering")) {
		t.Fatalf("steering without a config:\n%s\n%s", hls, mpd)
	}
}

// TestSteeringMPDRefresh: with a DASHManifest the MPD's Location is the
// steering server's redirect (no serviceLocation, so no clone replaces it),
// and the live Period carries MPD reload events half a second before the
// ends of its newest segments, each with its time as id.
func TestSteeringMPDRefresh(t *testing.T) {
	cfg := steeringConfig()
	inner := cfg.Steering
	cfg.Steering = func(app, name string) *Steering {
		s := inner(app, name)
		s.DASHManifest = "http://steer.example:8080/steer/dash/" + app + "/" + name + "/manifest.mpd?base=relay-na"
		return s
	}
	_, src, srv := testServer(t, cfg)
	startStream(t, src, srv.URL)
	_, body := get(t, srv.Client(), srv.URL+"/dash/live/test/manifest.mpd")
	mpd, err := m.ReadFromString(string(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(mpd.Location) != 1 || mpd.Location[0].Value != "http://steer.example:8080/steer/dash/live/test/manifest.mpd?base=relay-na" ||
		mpd.Location[0].ServiceLocation != "" {
		t.Fatalf("locations %+v", mpd.Location)
	}
	period := mpd.Periods[len(mpd.Periods)-1]
	if len(period.EventStreams) != 1 {
		t.Fatalf("event streams %+v\n%s", period.EventStreams, body)
	}
	es := period.EventStreams[0]
	if es.SchemeIdUri != "urn:mpeg:dash:event:2012" || es.Value != "1" || es.Timescale == nil || *es.Timescale != 1000 ||
		len(es.Events) == 0 || len(es.Events) > 3 {
		t.Fatalf("event stream %+v", es)
	}
	// The ends of the video timeline's segments, in ms from the Period start.
	tmpl := period.AdaptationSets[0].SegmentTemplate
	ends := map[uint64]bool{}
	for _, s := range tmpl.SegmentTimeline.S {
		for k, at := 0, *s.T; k <= max(s.R, 0); k++ {
			at += s.D
			ends[(at-*tmpl.PresentationTimeOffset)*1000/uint64(*tmpl.Timescale)] = true
		}
	}
	for _, e := range es.Events {
		if e.Id == nil || *e.Id != e.PresentationTime || !ends[e.PresentationTime+500] {
			t.Errorf("event %+v is not 500 ms before a segment's end (%v)", e, ends)
		}
	}
}

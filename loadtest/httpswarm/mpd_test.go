package httpswarm

import (
	"net/url"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	for _, c := range []struct{ tmpl, want string }{
		{"$RepresentationID$_t$Time$.m4s", "full_t90000.m4s"},
		{"seg-$Number%05d$-$Bandwidth$.m4s", "seg-00007-1500.m4s"},
		{"a$$b", "a$b"},
	} {
		got, err := expand(c.tmpl, "full", 1500, 7, 90000)
		if err != nil || got != c.want {
			t.Errorf("%q: %q %v, want %q", c.tmpl, got, err, c.want)
		}
	}
	for _, bad := range []string{"$Number", "$Foo$", "$Number%d$", "$RepresentationID%05d$"} {
		if _, err := expand(bad, "x", 1, 1, 1); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseMPDTemplates(t *testing.T) {
	body := `<MPD type="dynamic" availabilityStartTime="2026-12-01T11:00:00Z" minimumUpdatePeriod="PT2S" suggestedPresentationDelay="PT4S">
<BaseURL>media/</BaseURL>
<Period id="p0" start="PT10S">
 <AdaptationSet mimeType="video/mp4">
  <SegmentTemplate media="$RepresentationID$-$Number$.m4s" initialization="$RepresentationID$-init.mp4" duration="2" startNumber="1"/>
  <Representation id="hi" bandwidth="3000000"/><Representation id="lo" bandwidth="500000"/>
 </AdaptationSet>
 <AdaptationSet contentType="audio">
  <SegmentTemplate media="a-$Time$.m4s" initialization="a-init.mp4" timescale="1000" presentationTimeOffset="1000">
   <SegmentTimeline><S t="1000" d="2000" r="2"/><S d="1000"/><S d="500" r="-1"/></SegmentTimeline>
  </SegmentTemplate>
  <Representation id="a" bandwidth="64000"/>
 </AdaptationSet>
</Period></MPD>`
	base, _ := url.Parse("http://127.0.0.1:9/dash/live/x/manifest.mpd")
	now := time.Date(2026, 12, 1, 11, 0, 20, 500_000_000, time.UTC) // 10.5 s into the Period
	m, err := parseMPD(base, []byte(body), now)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Dynamic || m.UpdatePeriod != 2*time.Second || m.Delay != 4*time.Second || m.First != "hi" {
		t.Fatalf("%+v", m)
	}
	if len(m.Video) != 2 || m.Video[0].Name != "lo" || m.Video[1].Name != "hi" {
		t.Fatalf("video %+v", m.Video)
	}
	// 10.5 s of 2 s segments: 5 complete, numbers 1-5, the last at 18 s.
	hi := m.Video[1].Segs
	if len(hi) != 5 || hi[4].URL != "http://127.0.0.1:9/dash/live/x/media/hi-5.m4s" || hi[4].Start != 18 || hi[0].Init != "http://127.0.0.1:9/dash/live/x/media/hi-init.mp4" {
		t.Fatalf("hi %+v", hi)
	}
	// Audio: 3 × 2 s, 1 s, then 0.5 s repeated up to now (10.5 s into the
	// Period): 7 more, the last from 20 s to 20.5 s.
	a := m.Audio[0].Segs
	if len(a) != 11 || a[0].Start != 10 || a[0].URL != "http://127.0.0.1:9/dash/live/x/media/a-1000.m4s" || a[4].Start != 17 || a[10].Start != 20 || a[10].Dur != 0.5 {
		t.Fatalf("audio %+v", a)
	}
}

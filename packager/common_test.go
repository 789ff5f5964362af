package packager

import (
	"strconv"
	"strings"
	"testing"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/av"
)

// metadataFrame is an onMetaData frame carrying a publish id, as the
// primary's ingest writes it.
func metadataFrame(ts uint32, publish string) *av.Frame {
	props := amf.ECMAArray{"width": 640.0, "height": 360.0}
	if publish != "" {
		props[PublishIDKey] = publish
	}
	return av.New(av.KindData, ts, amf.MustEncode("onMetaData", props), 0)
}

// joinAt returns what a subscriber joining at GOP g of frames receives: the
// metadata and sequence headers, then the frames from that GOP's keyframe
// (the hub's join burst).
func joinAt(meta *av.Frame, frames []*av.Frame, g int) []*av.Frame {
	out := []*av.Frame{meta}
	kf := 0
	for i, f := range frames {
		if f.SeqHeader {
			out = append(out, f)
			continue
		}
		if f.Kind == av.KindVideo && f.Keyframe {
			if kf == g {
				return append(out, frames[i:]...)
			}
			kf++
		}
	}
	return nil
}

// timelines renders st's manifest and returns, per representation, its
// media template and the segment times listed.
func timelines(t *testing.T, st *stream) (tmpl map[string]string, times map[string][]uint64, start map[string]string) {
	t.Helper()
	b, err := st.manifest("http://node.example", "/dash/"+st.app+"/"+st.name+"/")
	if err != nil {
		t.Fatal(err)
	}
	mpd, err := m.ReadFromString(string(b))
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	tmpl, times, start = map[string]string{}, map[string][]uint64{}, map[string]string{}
	for _, p := range mpd.Periods {
		for _, as := range p.AdaptationSets {
			st := as.SegmentTemplate
			for _, rep := range as.Representations {
				id := rep.Id
				tmpl[id] = st.Media + " " + st.Initialization
				start[id] = p.Id + " " + p.Start.String()
				if st.PresentationTimeOffset != nil {
					start[id] += " pto " + strconv.FormatUint(*st.PresentationTimeOffset, 10)
				}
				for _, s := range st.SegmentTimeline.S {
					for k := 0; k <= s.R; k++ {
						times[id] = append(times[id], *s.T+uint64(k)*s.D)
					}
				}
			}
		}
	}
	return tmpl, times, start
}

// TestCommonSegmentNames: two servers packaging the same stream (a primary
// that saw it from the start and a relay whose packager joined three GOPs
// later, at the keyframe the hub's join burst starts with) give the same
// DASH file names, Period, offset and timeline, so a player steered from
// one to the other asks the new one for segments it has. Without a publish
// id in the metadata (a source outside the mesh) the names stay private to
// each server.
func TestCommonSegmentNames(t *testing.T) {
	// Media times from 7 s on, as on a relay of a stream published a while ago.
	frames := synthGOPs(7000, 12, true)
	for _, publish := range []string{"5f2a9c01d3e4b7a8", ""} {
		meta := metadataFrame(7000, publish)
		a := testStream(t, Config{})
		a.pushAll(append([]*av.Frame{meta}, frames...))
		b := testStream(t, Config{})
		b.pushAll(joinAt(meta, frames, 3))
		ta, xa, sa := timelines(t, a)
		tb, xb, sb := timelines(t, b)
		for _, rep := range []string{"full", "lite", "key", "audio"} {
			same := ta[rep] == tb[rep]
			if publish != "" && !same {
				t.Errorf("%s: templates differ: %q and %q", rep, ta[rep], tb[rep])
			}
			if publish == "" {
				if same {
					t.Errorf("%s: without a publish id both servers name files %q", rep, ta[rep])
				}
				continue
			}
			if sa[rep] != sb[rep] {
				t.Errorf("%s: periods differ: %q and %q", rep, sa[rep], sb[rep])
			}
			if len(xa[rep]) == 0 || len(xb[rep]) == 0 {
				t.Fatalf("%s: no segments listed (%v, %v)", rep, xa[rep], xb[rep])
			}
			// The relay lists the newest segments; they are the primary's too.
			if fmtTimes(xb[rep]) != fmtTimes(xa[rep][len(xa[rep])-len(xb[rep]):]) {
				t.Errorf("%s: timelines differ:\nprimary %v\nrelay   %v", rep, xa[rep], xb[rep])
			}
		}
	}
}

func fmtTimes(v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(s, " ")
}

// TestNumberManifest: number.mpd (and manifest.mpd for GStreamer) address
// the segments by $Number$ on the session's nominal grid; index n names the
// segment starting at n × the nominal duration.
func TestNumberManifest(t *testing.T) {
	st := testStream(t, Config{})
	st.pushAll(append([]*av.Frame{metadataFrame(0, "p1")}, synthGOPs(0, 12, true)...))
	b, err := st.renderMPD("http://node.example", "/dash/"+st.app+"/"+st.name+"/", true)
	if err != nil {
		t.Fatal(err)
	}
	mpd, err := m.ReadFromString(string(b))
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for _, as := range mpd.Periods[0].AdaptationSets {
		tmpl := as.SegmentTemplate
		if tmpl.SegmentTimeline != nil || tmpl.Duration == nil || *tmpl.Duration != 2000 || *tmpl.Timescale != 1000 ||
			!strings.HasSuffix(tmpl.Media, "_$RepresentationID$_d$Number$.m4s") || *tmpl.StartNumber != 0 {
			t.Fatalf("template %+v\n%s", tmpl, b)
		}
	}
	// Video: full alone (numberRendition: GStreamer mis-times the pictures
	// of lite and key and then shows nothing for the stream's age).
	for _, as := range mpd.Periods[0].AdaptationSets {
		if as.ContentType != "video" {
			continue
		}
		if len(as.Representations) != 1 || as.Representations[0].Id != Full.String() {
			var ids []string
			for _, r := range as.Representations {
				ids = append(ids, r.Id)
			}
			t.Errorf("video representations %v, want [full]\n%s", ids, b)
		}
	}
	if time.Duration(*mpd.TimeShiftBufferDepth) < 18*time.Second || time.Duration(*mpd.SuggestedPresentationDelay) < 14*time.Second {
		t.Errorf("timeShiftBufferDepth %v, suggestedPresentationDelay %v: want the kept segments", *mpd.TimeShiftBufferDepth, *mpd.SuggestedPresentationDelay)
	}
	sid := st.seg.sess.tid
	for n, want := range map[uint64]int64{5: 10000, 10: 20000} {
		req, ok := parseFile("dash", sid+"_full_d"+strconv.FormatUint(n, 10)+".m4s")
		if !ok {
			t.Fatal("not parsed")
		}
		seg := st.lookup(req)
		if seg == nil || seg.start != want {
			t.Errorf("index %d: %v, want the segment at %d ms", n, seg, want)
		}
	}
	if req, _ := parseFile("dash", sid+"_full_d40.m4s"); st.lookup(req) != nil {
		t.Error("index 40 found")
	}
}

func FuzzReadPublishID(f *testing.F) {
	f.Add(metadataFrame(0, "5f2a9c01d3e4b7a8").Payload)
	f.Fuzz(func(t *testing.T, b []byte) {
		if id := publishID(b); len(id) > maxPublishID {
			t.Fatalf("%d bytes of id", len(id))
		}
	})
}

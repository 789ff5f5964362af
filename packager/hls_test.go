package packager

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/relaymesh/relaymesh/internal/av"
)

// testAVCSeqSmall is a real x264 sequence header of another picture size and
// profile (320x240, Constrained Baseline) than testAVCSeq.
var testAVCSeqSmall = []byte{0x17, 0x0, 0x0, 0x0, 0x0, 0x1, 0x42, 0xc0, 0xd, 0xff, 0xe1, 0x0, 0x16, 0x67, 0x42, 0xc0, 0xd, 0xda, 0x5, 0x7, 0xec, 0x4, 0x40, 0x0, 0x0, 0x3, 0x0, 0x40, 0x0, 0x0, 0xc, 0x83, 0xc5, 0xa, 0xa8, 0x1, 0x0, 0x4, 0x68, 0xce, 0xf, 0xc8}

// testStream is a stream of a packager that is never started: the test
// pushes frames into its segmenter and renders its files directly.
func testStream(t *testing.T, cfg Config) *stream {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	p, err := New(newPushSource(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p.newStream("live", "test")
}

func (st *stream) pushAll(frames []*av.Frame) {
	for _, f := range frames {
		st.seg.push(f)
	}
}

func render(t *testing.T, st *stream, r Rendition) string {
	t.Helper()
	b, err := st.mediaPlaylist(r)
	_, text := parsedMedia(t, b, err)
	return text
}

// parsedMedia checks that a media playlist rendered (b, err) parses, and
// returns it parsed and as text.
func parsedMedia(t *testing.T, b []byte, err error) (*playlist.Media, string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var pl playlist.Media
	if err := pl.Unmarshal(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return &pl, string(b)
}

// listed is a segment of a rendered media playlist.
type listed struct {
	sid  string
	msn  int
	disc bool // an EXT-X-DISCONTINUITY precedes it
}

var uriRE = regexp.MustCompile(`URI="([0-9a-f]{8})_[a-z]+_`)

// walk reads a media playlist the way a player does and checks that every
// segment, part and preload hint is preceded by the EXT-X-MAP of its own
// session, and that a change of session comes with EXT-X-DISCONTINUITY. It
// returns the segments, and the discontinuity before the segment in
// progress (its parts or preload hint).
func walk(t *testing.T, body string) (segs []listed, hintDisc bool) {
	t.Helper()
	curMap, prevSid := "", ""
	disc := false
	for line := range strings.SplitSeq(strings.TrimSpace(body), "\n") {
		switch {
		case strings.HasPrefix(line, "#EXT-X-MAP:"):
			curMap = uriRE.FindStringSubmatch(line)[1]
		case line == "#EXT-X-DISCONTINUITY":
			disc = true
		case strings.HasPrefix(line, "#EXT-X-PART:"), strings.HasPrefix(line, "#EXT-X-PRELOAD-HINT:"):
			sid := uriRE.FindStringSubmatch(line)[1]
			if curMap != "" && sid != curMap {
				t.Fatalf("%s after the map of session %s\n%s", line, curMap, body)
			}
			if sid != prevSid && prevSid != "" {
				if !disc {
					t.Fatalf("%s: session change without a discontinuity\n%s", line, body)
				}
				hintDisc = true
			}
		case line != "" && !strings.HasPrefix(line, "#"):
			sid, rest, _ := strings.Cut(line, "_")
			if curMap != "" && sid != curMap {
				t.Fatalf("segment %s after the map of session %s\n%s", line, curMap, body)
			}
			if prevSid != "" && (sid != prevSid) != disc {
				t.Fatalf("segment %s: discontinuity %v, session %s after %s\n%s", line, disc, sid, prevSid, body)
			}
			_, n, _ := strings.Cut(rest, "_")
			msn, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(n, ".m4s"), ".ts"))
			segs = append(segs, listed{sid: sid, msn: msn, disc: disc})
			prevSid, disc = sid, false
		}
	}
	return segs, hintDisc
}

// TestLowLatencyPlaylists: parts are listed for the three newest complete
// segments and the one in progress only; every fMP4 playlist answers
// blocking reloads; each reports where the other renditions stand.
func TestLowLatencyPlaylists(t *testing.T) {
	st := testStream(t, Config{})
	st.pushAll(synthGOPs(0, 6, true)) // segments 0-4 complete, 5 in progress
	sid := st.seg.sess.id
	cur := st.seg.cur
	if cur == nil || cur.msn != 5 {
		t.Fatal("no segment 5 in progress")
	}
	curParts := len(cur.track(Full).parts)
	audioParts := len(cur.track(Audio).parts)

	full := render(t, st, Full)
	// The ladder's PART-TARGET: the longest part of any rendition (audio's
	// parts end on AAC frames, a little over 200 ms).
	pt := st.seg.partMax
	if pt < 200*time.Millisecond || pt > 240*time.Millisecond {
		t.Fatalf("PART-TARGET %v", pt)
	}
	for _, want := range []string{
		fmt.Sprintf("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%.5f\n", (3 * pt).Seconds()),
		fmt.Sprintf("#EXT-X-PART-INF:PART-TARGET=%.5f\n", pt.Seconds()),
		fmt.Sprintf("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"%s_full_5.%d.m4s\"\n", sid, curParts),
		"#EXT-X-RENDITION-REPORT:URI=\"lite.m3u8\",LAST-MSN=4\n",
		"#EXT-X-RENDITION-REPORT:URI=\"key.m3u8\",LAST-MSN=4\n",
		fmt.Sprintf("#EXT-X-RENDITION-REPORT:URI=\"audio.m3u8\",LAST-MSN=5,LAST-PART=%d\n", audioParts-1),
	} {
		if !strings.Contains(full, want) {
			t.Errorf("full.m3u8 lacks %q\n%s", want, full)
		}
	}
	if strings.Contains(full, "_full_1.9.m4s") || !strings.Contains(full, "_full_2.0.m4s") || !strings.Contains(full, "_full_4.9.m4s") || !strings.Contains(full, "_full_5.0.m4s") {
		t.Errorf("parts of full.m3u8: want those of segments 2 to 5 only\n%s", full)
	}
	if n := strings.Count(full, "#EXT-X-PART:"); n != 30+curParts {
		t.Errorf("%d parts listed, want %d", n, 30+curParts)
	}
	if segs, _ := walk(t, full); len(segs) != 5 {
		t.Errorf("%d segments", len(segs))
	}

	lite := render(t, st, Lite)
	for _, want := range []string{
		// No parts of its own, but the ladder's LL-HLS tags, holding back
		// two target durations.
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=4.00000\n",
		fmt.Sprintf("#EXT-X-PART-INF:PART-TARGET=%.5f\n", pt.Seconds()),
		fmt.Sprintf("#EXT-X-RENDITION-REPORT:URI=\"full.m3u8\",LAST-MSN=5,LAST-PART=%d\n", curParts-1),
	} {
		if !strings.Contains(lite, want) {
			t.Errorf("lite.m3u8 lacks %q\n%s", want, lite)
		}
	}
	if strings.Contains(lite, "#EXT-X-PART:") || strings.Contains(lite, "PRELOAD-HINT") {
		t.Errorf("lite.m3u8 has parts\n%s", lite)
	}

	// MPEG-TS playlists (old set-top boxes) stay plain.
	ts := testStream(t, Config{Default: AppConfig{HLS: HLSMPEGTS}})
	ts.pushAll(synthGOPs(0, 3, true))
	if pl := render(t, ts, Full); strings.Contains(pl, "SERVER-CONTROL") || strings.Contains(pl, "RENDITION-REPORT") || strings.Contains(pl, "#EXT-X-MAP") {
		t.Errorf("MPEG-TS playlist:\n%s", pl)
	}
}

// TestPlaylistsAcrossCodecChange: a publisher that comes back with another
// picture size and profile (new sequence headers) does not drop the
// segments already listed: the new session's segments follow after
// EXT-X-DISCONTINUITY with their own EXT-X-MAP, the multivariant playlist
// describes the new session, and EXT-X-DISCONTINUITY-SEQUENCE counts the
// discontinuity once the old segments have left the playlist.
func TestPlaylistsAcrossCodecChange(t *testing.T) {
	for _, format := range []HLSFormat{HLSLowLatency, HLSFMP4, HLSMPEGTS} {
		t.Run(string(format), func(t *testing.T) {
			st := testStream(t, Config{Default: AppConfig{HLS: format}})
			ll, tsFormat := format == HLSLowLatency, format == HLSMPEGTS
			st.pushAll(synthGOPs(0, 3, true)) // segments 0, 1 complete; 2 in progress
			old := st.seg.sess.id
			// The publisher leaves, and comes back with other parameters.
			st.seg.push(av.NewEvent(av.EventUnpublish, 6000))
			st.seg.push(av.NewEvent(av.EventPublish, 6000))
			st.seg.push(video(6000, testAVCSeqSmall))
			st.seg.push(audio(6000, testAACSeq))
			st.pushAll(synthGOPs(6000, 1, false)) // segment 3 (new) in progress
			sid := st.seg.sess.id
			if sid == old || st.seg.sess.disc != 1 {
				t.Fatal("no new session")
			}

			// Only old segments are complete; in low latency, the new
			// segment's parts follow a discontinuity.
			for _, r := range []Rendition{Full, Audio} {
				segs, hintDisc := walk(t, render(t, st, r))
				if len(segs) != 3 || segs[2].sid != old || hintDisc != ll {
					t.Fatalf("%v: segments %+v, discontinuity before the parts %v", r, segs, hintDisc)
				}
			}
			mv, err := st.multivariant()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(mv), `CODECS="avc1.42c00d,mp4a.40.2",RESOLUTION=320x240`) {
				t.Errorf("the multivariant playlist does not describe the new session:\n%s", mv)
			}

			// Two new segments later: old, discontinuity, new.
			st.pushAll(synthGOPs(8000, 2, false))
			for r := Full; r < numRenditions; r++ {
				body := render(t, st, r)
				segs, _ := walk(t, body)
				if len(segs) != 5 || segs[2].sid != old || segs[3].sid != sid || !segs[3].disc {
					t.Fatalf("%v: %+v\n%s", r, segs, body)
				}
				if strings.Count(body, "#EXT-X-DISCONTINUITY\n") != 1 || strings.Contains(body, "DISCONTINUITY-SEQUENCE") {
					t.Fatalf("%v: discontinuity tags\n%s", r, body)
				}
				if maps := strings.Count(body, "#EXT-X-MAP:"); !tsFormat && maps != 2 || tsFormat && maps != 0 {
					t.Fatalf("%v: %d maps\n%s", r, maps, body)
				}
				if !tsFormat && !strings.Contains(body, "#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\""+sid+"_"+r.String()+"_init.mp4\"\n") {
					t.Fatalf("%v: no map after the discontinuity\n%s", r, body)
				}
			}

			// The old segments leave the window (seven listed): the count of
			// discontinuities removed goes up.
			st.pushAll(synthGOPs(12000, 6, false))
			body := render(t, st, Full)
			segs, _ := walk(t, body)
			if len(segs) != 7 || segs[0].sid != sid || strings.Contains(body, "#EXT-X-DISCONTINUITY\n") ||
				!strings.Contains(body, "#EXT-X-DISCONTINUITY-SEQUENCE:1\n") {
				t.Fatalf("after the old segments left: %+v\n%s", segs, body)
			}
			// Its files stay for late readers a few segments longer.
			if st.seg.session(old) == nil {
				t.Fatal("the old session's files went with its last listing")
			}
			st.pushAll(synthGOPs(24000, 3, false))
			if st.seg.session(old) != nil {
				t.Fatal("the old session outlived its segments")
			}
		})
	}
}

func TestAddMaps(t *testing.T) {
	in := "#EXTM3U\n#EXT-X-MAP:URI=\"a_init\"\n#EXTINF:2,\na_0.m4s\n#EXT-X-DISCONTINUITY\n#EXTINF:2,\nb_1.m4s\n" +
		"#EXT-X-PART:DURATION=0.2,URI=\"c_2.0.m4s\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"c_2.1.m4s\"\n"
	want := "#EXTM3U\n#EXT-X-MAP:URI=\"a_init\"\n#EXTINF:2,\na_0.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"b_init\"\n#EXTINF:2,\nb_1.m4s\n" +
		"#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"c_init\"\n#EXT-X-PART:DURATION=0.2,URI=\"c_2.0.m4s\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"c_2.1.m4s\"\n"
	if got := string(addMaps([]byte(in), []string{"b_init"}, "c_init")); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestLiteLeftOutOfHLSLadder: a stream without disposable frames (lite is
// then the GOP-tail variant) does not offer lite in the multivariant
// playlist nor in rendition reports; its playlist is still served. A stream
// with disposable frames offers it.
func TestLiteLeftOutOfHLSLadder(t *testing.T) {
	noDisposable := func(frames []*av.Frame) []*av.Frame {
		out := make([]*av.Frame, 0, len(frames))
		for _, f := range frames {
			if f.Kind == av.KindVideo && f.Disposable {
				f = video(f.Timestamp, interframe(500))
			}
			out = append(out, f)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		frames   []*av.Frame
		wantLite bool
	}{
		{"disposable frames", synthGOPs(0, 4, true), true},
		{"none", noDisposable(synthGOPs(0, 4, true)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := testStream(t, Config{})
			st.pushAll(tc.frames)
			mv, err := st.multivariant()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(mv), "lite.m3u8"); got != tc.wantLite {
				t.Fatalf("lite listed: %v, want %v\n%s", got, tc.wantLite, mv)
			}
			full := render(t, st, Full)
			if got := strings.Contains(full, `RENDITION-REPORT:URI="lite.m3u8"`); got != tc.wantLite {
				t.Fatalf("lite reported: %v, want %v\n%s", got, tc.wantLite, full)
			}
			if body := render(t, st, Lite); !strings.Contains(body, "#EXTINF") {
				t.Fatalf("lite's playlist is not served:\n%s", body)
			}
			if !strings.Contains(string(mv), "key.m3u8") || !strings.Contains(string(mv), "full.m3u8") {
				t.Fatalf("full or key missing:\n%s", mv)
			}
		})
	}
}

// TestPartHoldBack: PART-HOLD-BACK is Config.PartHoldBack part targets in
// every playlist of the ladder with parts, never under the specification's
// two; the renditions without parts still hold back two target durations.
func TestPartHoldBack(t *testing.T) {
	for _, c := range []struct{ set, want float64 }{{0, 3}, {2, 2}, {2.5, 2.5}, {1, 2}} {
		st := testStream(t, Config{PartHoldBack: c.set})
		st.pushAll(synthGOPs(0, 6, true))
		pt := st.seg.partMax
		for _, r := range []Rendition{Full, Audio} {
			want := fmt.Sprintf("PART-HOLD-BACK=%.5f\n", time.Duration(float64(pt)*c.want).Seconds())
			if pl := render(t, st, r); !strings.Contains(pl, want) {
				t.Errorf("part_hold_back %v: %v playlist lacks %q\n%s", c.set, r, want, pl)
			}
		}
		if pl := render(t, st, Key); !strings.Contains(pl, "#EXT-X-TARGETDURATION:2\n") || !strings.Contains(pl, "PART-HOLD-BACK=4.00000\n") {
			t.Errorf("part_hold_back %v: key playlist's hold-back is not two target durations (2 s GOPs)\n%s", c.set, pl)
		}
	}
}

package packager

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/relaymesh/relaymesh/internal/av"
)

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
	if err != nil {
		t.Fatal(err)
	}
	var pl playlist.Media
	if err := pl.Unmarshal(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return string(b)
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

// TestLowLatencyPlaylists: parts are listed for the newest complete
// segment and the one in progress only; every fMP4 playlist answers
// blocking reloads; each reports where the other renditions stand.
func TestLowLatencyPlaylists(t *testing.T) {
	st := testStream(t, Config{})
	st.pushAll(synthGOPs(0, 4, true)) // segments 0-2 complete, 3 in progress
	sid := st.seg.sess.id
	cur := st.seg.cur
	if cur == nil || cur.msn != 3 {
		t.Fatal("no segment 3 in progress")
	}
	sess := st.seg.sess
	curParts := len(cur.tracks[trackIndex(sess, sess.byRend[Full])].parts)
	audioParts := len(cur.tracks[trackIndex(sess, sess.byRend[Audio])].parts)

	full := render(t, st, Full)
	for _, want := range []string{
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.60000\n",
		"#EXT-X-PART-INF:PART-TARGET=0.20000\n",
		fmt.Sprintf("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"%s_full_3.%d.m4s\"\n", sid, curParts),
		"#EXT-X-RENDITION-REPORT:URI=\"lite.m3u8\",LAST-MSN=2\n",
		"#EXT-X-RENDITION-REPORT:URI=\"key.m3u8\",LAST-MSN=2\n",
		fmt.Sprintf("#EXT-X-RENDITION-REPORT:URI=\"audio.m3u8\",LAST-MSN=3,LAST-PART=%d\n", audioParts-1),
	} {
		if !strings.Contains(full, want) {
			t.Errorf("full.m3u8 lacks %q\n%s", want, full)
		}
	}
	if strings.Contains(full, "_full_1.0.m4s") || !strings.Contains(full, "_full_2.9.m4s") || !strings.Contains(full, "_full_3.0.m4s") {
		t.Errorf("parts of full.m3u8: want those of segments 2 and 3 only\n%s", full)
	}
	if n := strings.Count(full, "#EXT-X-PART:"); n != 10+curParts {
		t.Errorf("%d parts listed, want %d", n, 10+curParts)
	}
	if segs, _ := walk(t, full); len(segs) != 3 {
		t.Errorf("%d segments", len(segs))
	}

	lite := render(t, st, Lite)
	for _, want := range []string{
		"#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES\n",
		fmt.Sprintf("#EXT-X-RENDITION-REPORT:URI=\"full.m3u8\",LAST-MSN=3,LAST-PART=%d\n", curParts-1),
	} {
		if !strings.Contains(lite, want) {
			t.Errorf("lite.m3u8 lacks %q\n%s", want, lite)
		}
	}
	if strings.Contains(lite, "#EXT-X-PART") || strings.Contains(lite, "PRELOAD-HINT") {
		t.Errorf("lite.m3u8 has parts\n%s", lite)
	}

	// MPEG-TS playlists (old set-top boxes) stay plain.
	ts := testStream(t, Config{Default: AppConfig{HLS: HLSMPEGTS}})
	ts.pushAll(synthGOPs(0, 3, true))
	if pl := render(t, ts, Full); strings.Contains(pl, "SERVER-CONTROL") || strings.Contains(pl, "RENDITION-REPORT") || strings.Contains(pl, "#EXT-X-MAP") {
		t.Errorf("MPEG-TS playlist:\n%s", pl)
	}
}

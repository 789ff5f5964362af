package packager

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/relaymesh/relaymesh/internal/av"
)

// ladderPlaylists fetches index.m3u8 through the handler and every media
// playlist it names (variants and EXT-X-MEDIA), parsed.
func ladderPlaylists(t *testing.T, st *stream) map[string]*playlist.Media {
	t.Helper()
	h := st.p.Handler()
	st.p.mu.Lock()
	st.p.streams["live/test"] = st
	st.p.mu.Unlock()
	close(st.ready)
	get := func(name string) []byte {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/hls/live/test/"+name, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	var mv playlist.Multivariant
	if err := mv.Unmarshal(get("index.m3u8")); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, v := range mv.Variants {
		names[v.URI] = true
	}
	for _, r := range mv.Renditions {
		if r.URI != nil {
			names[*r.URI] = true
		}
	}
	out := map[string]*playlist.Media{}
	for name := range names {
		var pl playlist.Media
		body := get(name)
		if err := pl.Unmarshal(body); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, body)
		}
		out[name] = &pl
	}
	return out
}

// TestLadderConsistentForStrictParsers: every media playlist of a ladder
// carries the same LL-HLS tags. A strict player takes PART-TARGET from the
// first playlist it loads and requires PART-HOLD-BACK in every playlist
// with EXT-X-SERVER-CONTROL; so in a low-latency ladder every playlist has
// EXT-X-PART-INF with the one PART-TARGET and a PART-HOLD-BACK of at least
// twice it (three target durations for the renditions without parts of
// their own), and no part is longer than the target. In the fMP4 and
// MPEG-TS formats no playlist has any part tag.
func TestLadderConsistentForStrictParsers(t *testing.T) {
	noDisposable := func(frames []*av.Frame) []*av.Frame {
		for i, f := range frames {
			if f.Kind == av.KindVideo && f.Disposable {
				frames[i] = video(f.Timestamp, interframe(500))
			}
		}
		return frames
	}
	for _, format := range []HLSFormat{HLSLowLatency, HLSFMP4, HLSMPEGTS} {
		for _, disposable := range []bool{true, false} {
			name := string(format) + "/no-disposable"
			if disposable {
				name = string(format) + "/disposable"
			}
			t.Run(name, func(t *testing.T) {
				st := testStream(t, Config{Default: AppConfig{HLS: format}})
				frames := synthGOPs(0, 6, true)
				if !disposable {
					frames = noDisposable(frames)
				}
				st.pushAll(frames)
				pls := ladderPlaylists(t, st)
				want := 4
				if !disposable {
					want = 3 // no lite in the HLS ladder
				}
				if len(pls) != want {
					t.Fatalf("%d playlists in the ladder, want %d", len(pls), want)
				}
				var first *playlist.Media
				var firstName string
				for name, pl := range pls {
					if first == nil {
						first, firstName = pl, name
					}
					if (pl.ServerControl == nil) != (first.ServerControl == nil) || (pl.PartInf == nil) != (first.PartInf == nil) {
						t.Errorf("%s and %s differ in EXT-X-SERVER-CONTROL / EXT-X-PART-INF", name, firstName)
						continue
					}
					hasParts := len(pl.Parts) > 0 || pl.PreloadHint != nil
					for _, s := range pl.Segments {
						hasParts = hasParts || len(s.Parts) > 0
					}
					if hasParts && pl.PartInf == nil {
						t.Errorf("%s lists parts without EXT-X-PART-INF", name)
					}
					if pl.PartInf == nil {
						if format == HLSLowLatency {
							t.Errorf("%s: no EXT-X-PART-INF in a low-latency ladder", name)
						}
						continue
					}
					if format != HLSLowLatency {
						t.Errorf("%s: EXT-X-PART-INF in format %s", name, format)
					}
					if pl.PartInf.PartTarget != first.PartInf.PartTarget {
						t.Errorf("%s: PART-TARGET %v, %s has %v", name, pl.PartInf.PartTarget, firstName, first.PartInf.PartTarget)
					}
					if pl.ServerControl == nil || pl.ServerControl.PartHoldBack == nil {
						t.Errorf("%s: EXT-X-PART-INF without PART-HOLD-BACK", name)
						continue
					}
					hold := *pl.ServerControl.PartHoldBack
					if hold < 2*pl.PartInf.PartTarget {
						t.Errorf("%s: PART-HOLD-BACK %v under twice PART-TARGET %v", name, hold, pl.PartInf.PartTarget)
					}
					if !hasParts && hold < 2*time.Duration(pl.TargetDuration)*time.Second {
						t.Errorf("%s has no parts: PART-HOLD-BACK %v is under two target durations", name, hold)
					}
					parts := pl.Parts
					for _, s := range pl.Segments {
						parts = append(parts, s.Parts...)
					}
					for _, p := range parts {
						if p.Duration > pl.PartInf.PartTarget {
							t.Errorf("%s: part %s of %v over PART-TARGET %v", name, p.URI, p.Duration, pl.PartInf.PartTarget)
						}
					}
				}
				if format == HLSLowLatency {
					// Video with parts: full; audio has parts too.
					for _, name := range []string{"full.m3u8", "audio.m3u8"} {
						if pl := pls[name]; pl == nil || len(pl.Parts) == 0 {
							t.Errorf("%s: no parts", name)
						}
					}
				}
			})
		}
	}
}

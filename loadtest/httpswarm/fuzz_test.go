package httpswarm

import (
	"net/url"
	"testing"
	"time"
)

// FuzzParseHLS: any playlist body parses or fails cleanly, and what parses
// can be walked (start position, lookups, the media behind a position).
func FuzzParseHLS(f *testing.F) {
	f.Add([]byte("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:5\n#EXTINF:2.0,\na.ts\n#EXTINF:2.0,\nb.ts\n"))
	base, _ := url.Parse("http://127.0.0.1:8080/hls/live/test/index.m3u8")
	f.Fuzz(func(t *testing.T, body []byte) {
		l, m, err := parseHLS(base, body)
		if err != nil {
			return
		}
		if len(l.Video) == 0 {
			t.Fatal("a ladder without rungs")
		}
		if m == nil {
			return
		}
		for _, parts := range []bool{false, true} {
			p := m.startPos(parts, 3)
			var in time.Duration
			for range 2 * maxEntries {
				m.behind(p, parts)
				it, ok, behind := m.lookup(p, parts, in)
				if behind {
					t.Fatalf("start position %v is behind the playlist", p)
				}
				if !ok {
					if n := m.normalize(p); n != p {
						p, in = n, 0
						continue
					}
					break
				}
				if it.Next.MSN < p.MSN || it.Next == p {
					t.Fatalf("lookup at %v goes to %v", p, it.Next)
				}
				if it.Next.MSN != p.MSN {
					in = 0
				} else {
					in += it.Dur
				}
				p = it.Next
			}
		}
	})
}

// FuzzParseMPD: any manifest parses or fails cleanly, within the bounds.
func FuzzParseMPD(f *testing.F) {
	f.Add([]byte(`<MPD type="dynamic"><Period start="PT0S"><AdaptationSet contentType="video"><SegmentTemplate media="$RepresentationID$_$Number%05d$.m4s" initialization="i.mp4" timescale="1000"><SegmentTimeline><S t="0" d="2000" r="-1"/></SegmentTimeline></SegmentTemplate><Representation id="v" bandwidth="1000"/></AdaptationSet></Period></MPD>`))
	base, _ := url.Parse("http://127.0.0.1:8080/dash/live/test/manifest.mpd")
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseMPD(base, body, now)
		if err != nil {
			return
		}
		n := 0
		for _, r := range append(m.Video, m.Audio...) {
			n += len(r.Segs)
		}
		if n > maxEntries {
			t.Fatalf("%d segments", n)
		}
	})
}

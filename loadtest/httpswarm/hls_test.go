package httpswarm

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

const llPlaylist = `#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:1
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.6
#EXT-X-PART-INF:PART-TARGET=0.2
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-MAP:URI="s_full_init.mp4"
#EXT-X-PART:DURATION=0.5,URI="s_full_10.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.5,URI="s_full_10.1.m4s"
#EXTINF:1.0,
s_full_10.m4s
#EXT-X-PART:DURATION=0.2,URI="s_full_11.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.2,URI="s_full_11.1.m4s"
#EXT-X-PART:DURATION=0.2,URI="s_full_11.2.m4s"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI="s_full_11.3.m4s"
`

func TestHLSMedia(t *testing.T) {
	base, _ := url.Parse("http://127.0.0.1:1/hls/live/x/full.m3u8")
	l, m, err := parseHLS(base, []byte(llPlaylist))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Video) != 1 || l.Video[0].Name != "full" || m.MSN0 != 10 || m.PartTarget != 200*time.Millisecond || !m.CanBlock ||
		m.Map != "http://127.0.0.1:1/hls/live/x/s_full_init.mp4" || len(m.Segs) != 1 || len(m.Tail) != 3 {
		t.Fatalf("%+v %+v", l, m)
	}
	// Hold-back 0.6 s reaches 11.0, which is independent.
	p := m.startPos(true, 3)
	if p != (pos{11, 0}) || m.behind(p, true) != 600*time.Millisecond {
		t.Fatalf("start %v behind %v", p, m.behind(p, true))
	}
	it, ok, _ := m.lookup(pos{10, 1}, true, 500*time.Millisecond)
	if !ok || !it.IsPart || it.Next != (pos{11, 0}) {
		t.Fatalf("%+v", it)
	}
	// Without parts: the whole segment, the rest of it after a part.
	it, ok, _ = m.lookup(pos{10, 0}, false, 0)
	if !ok || it.IsPart || it.Dur != time.Second || !strings.HasSuffix(it.URI, "s_full_10.m4s") {
		t.Fatalf("%+v", it)
	}
	if _, ok, _ := m.lookup(pos{11, 3}, true, 0); ok {
		t.Fatal("the hinted part is not listed yet")
	}
	if _, _, behind := m.lookup(pos{9, 0}, true, 0); !behind {
		t.Fatal("segment 9 has left the playlist")
	}
	if got := blockingURL("http://h/full.m3u8", pos{11, 3}, true); got != "http://h/full.m3u8?_HLS_msn=11&_HLS_part=3" {
		t.Fatal(got)
	}
	if m.normalize(pos{10, 2}) != (pos{11, 0}) || m.normalize(pos{11, 3}) != (pos{11, 3}) {
		t.Fatal("normalize")
	}
}

func TestLadder(t *testing.T) {
	body := `#EXTM3U
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",DEFAULT=YES,URI="audio.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=1500000,CODECS="avc1.64001e,mp4a.40.2",AUDIO="a"
full.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=400000,CODECS="avc1.64001e,mp4a.40.2",AUDIO="a"
key.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=40000,CODECS="mp4a.40.2"
audio.m3u8
`
	base, _ := url.Parse("http://127.0.0.1:1/hls/live/x/index.m3u8")
	l, m, err := parseHLS(base, []byte(body))
	if err != nil || m != nil {
		t.Fatal(err, m)
	}
	if len(l.Video) != 2 || l.Video[0].Name != "key" || l.Video[1].Name != "full" || l.first != 1 ||
		l.Audio == nil || l.Audio.URI != "http://127.0.0.1:1/hls/live/x/audio.m3u8" {
		t.Fatalf("%+v audio %+v", l, l.Audio)
	}
}

package packager

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
	tscodecs "github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts/codecs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/relaymesh/relaymesh/internal/av"
)

// tsPlayMedia renders and parses the MPEG-TS media playlist of r.
func tsPlayMedia(t *testing.T, st *stream, r Rendition) (*playlist.Media, string) {
	t.Helper()
	b, err := st.tsPlayPlaylist(r)
	return parsedMedia(t, b, err)
}

// TestTSPlayPlaylist: in every format, ts.m3u8 is a multivariant playlist
// of one MPEG-TS variant (full with the audio), and ts_full.m3u8 a plain
// live MPEG-TS playlist (no EXT-X-MAP, parts or LL-HLS tags) of full's
// segments, with full.m3u8's media sequence, going on as the stream does,
// and EXT-X-ENDLIST once it ends.
func TestTSPlayPlaylist(t *testing.T) {
	for _, format := range []HLSFormat{HLSLowLatency, HLSFMP4, HLSMPEGTS} {
		t.Run(string(format), func(t *testing.T) {
			st := testStream(t, Config{Default: AppConfig{HLS: format}})
			st.pushAll(synthGOPs(0, 4, true))
			mv, err := st.tsPlayMultivariant()
			if err != nil {
				t.Fatal(err)
			}
			var mpl playlist.Multivariant
			if err := mpl.Unmarshal(mv); err != nil {
				t.Fatalf("%v\n%s", err, mv)
			}
			if len(mpl.Variants) != 1 || mpl.Variants[0].URI != "ts_full.m3u8" || len(mpl.Variants[0].Codecs) != 2 ||
				mpl.Variants[0].Resolution == "" || mpl.Variants[0].Bandwidth <= 1 || len(mpl.Renditions) != 0 {
				t.Errorf("ts.m3u8:\n%s", mv)
			}
			sid := st.seg.current().id
			var first int
			for round := range 12 {
				pl, body := tsPlayMedia(t, st, Full)
				full, _ := st.mediaPlaylist(Full)
				var fpl playlist.Media
				if err := fpl.Unmarshal(full); err != nil {
					t.Fatal(err)
				}
				if pl.MediaSequence != fpl.MediaSequence || len(pl.Segments) != len(fpl.Segments) {
					t.Fatalf("media sequence %d (%d segments), full.m3u8's %d (%d)", pl.MediaSequence, len(pl.Segments), fpl.MediaSequence, len(fpl.Segments))
				}
				if round > 0 && pl.MediaSequence < first {
					t.Fatalf("media sequence went back from %d to %d", first, pl.MediaSequence)
				}
				first = pl.MediaSequence
				for k, s := range pl.Segments {
					if want := sid + "_full_" + strconv.Itoa(pl.MediaSequence+k) + ".ts"; s.URI != want {
						t.Fatalf("segment %d is %s, want %s\n%s", k, s.URI, want, body)
					}
					if s.Duration < time.Second || len(s.Parts) > 0 {
						t.Fatalf("segment %d: %v, %d parts", k, s.Duration, len(s.Parts))
					}
				}
				if pl.TargetDuration < 2 || pl.Version > 3 {
					t.Errorf("target duration %d, version %d", pl.TargetDuration, pl.Version)
				}
				for _, bad := range []string{"#EXT-X-MAP", "#EXT-X-PART", "SERVER-CONTROL", "PRELOAD-HINT", "RENDITION-REPORT", "#EXT-X-ENDLIST", ".m4s"} {
					if strings.Contains(body, bad) {
						t.Fatalf("ts_full.m3u8 has %s:\n%s", bad, body)
					}
				}
				st.pushAll(synthGOPs(uint32(8000+2000*round), 1, false))
			}
			if first < 5 {
				t.Errorf("the window did not move: media sequence %d", first)
			}
			st.end()
			if _, body := tsPlayMedia(t, st, Full); !strings.HasSuffix(body, "#EXT-X-ENDLIST\n") {
				t.Errorf("ended, without EXT-X-ENDLIST:\n%s", body)
			}
		})
	}
}

// TestParseTSPlay: the MPEG-TS playlist's names; its segments are the
// MPEG-TS segment names of apps configured mpegts.
func TestParseTSPlay(t *testing.T) {
	for file, want := range map[string]fileReq{
		"ts.m3u8":             {kind: fileMultivariant, tsPlay: true},
		"ts_full.m3u8":        {kind: fileMedia, rend: Full, tsPlay: true},
		"ts_audio.m3u8":       {kind: fileMedia, rend: Audio, tsPlay: true},
		"0123abcd_full_12.ts": {kind: fileTS, rend: Full, sid: "0123abcd", n: 12},
	} {
		got, ok := parseFile("hls", file)
		if !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", file, got, ok, want)
		}
	}
	for _, file := range []string{"ts_lite.m3u8", "ts_key.m3u8", "ts_.m3u8", "ts_muxed.m3u8"} {
		if _, ok := parseFile("hls", file); ok {
			t.Errorf("%s parsed", file)
		}
	}
	if _, ok := parseFile("dash", "ts.m3u8"); ok {
		t.Error("a DASH ts.m3u8 parsed")
	}
}

var tsSegRE = regexp.MustCompile(`(?m)^([0-9a-f]{8}_full_(\d+)\.ts)$`)

// tsPackets checks the MPEG-TS framing of b and the continuity counters of
// every PID against cc (the counters after the previous file), which it
// updates; it returns the PIDs seen.
func tsPackets(t *testing.T, name string, b []byte, cc map[uint16]byte) map[uint16]int {
	t.Helper()
	if len(b) == 0 || len(b)%188 != 0 {
		t.Fatalf("%s: %d bytes, not whole TS packets", name, len(b))
	}
	pids := map[uint16]int{}
	for off := 0; off < len(b); off += 188 {
		p := b[off : off+188]
		if p[0] != 0x47 {
			t.Fatalf("%s: no sync byte at %d", name, off)
		}
		pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
		pids[pid]++
		if off == 0 && pid != 0 {
			t.Errorf("%s starts with PID %d, not the PAT", name, pid)
		}
		if p[3]&0x10 == 0 {
			continue // no payload: the counter stays
		}
		c := p[3] & 0x0f
		if last, ok := cc[pid]; ok && c != (last+1)&0x0f {
			t.Fatalf("%s: PID %d counter %d after %d", name, pid, c, last)
		}
		cc[pid] = c
	}
	return pids
}

// TestTSPlayLazy: over HTTP, a stream nobody asks ts.m3u8 of makes no
// MPEG-TS; the first request for a file of it makes it and the kept ones
// before it, in order, and each later one is made when asked for, once; the files
// are one MPEG-TS stream (continuity counters running on from one to the
// next, video and audio timestamps increasing across them); nothing more is
// made once nobody asks, and the stream stops after Linger as usual.
func TestTSPlayLazy(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, src, srv := testServer(t, Config{Registerer: reg, Linger: 2 * time.Second})
	base := srv.URL + "/hls/live/test/"
	_, sub := startStream(t, src, srv.URL)
	sub.push(synthGOPs(2000, 5, false)...)
	made := func() float64 { return value(t, p.m.segments.WithLabelValues("ts")) }
	// fMP4 viewers only: no MPEG-TS made.
	waitUntil(t, "five segments", func() bool {
		_, b := get(t, http.DefaultClient, base+"full.m3u8")
		return bytes.Count(b, []byte("#EXTINF")) >= 5
	})
	if n := made(); n != 0 {
		t.Fatalf("%v MPEG-TS files made for fMP4 viewers", n)
	}
	resp, mv := get(t, http.DefaultClient, base+"ts.m3u8")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctypeM3U8 || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		!bytes.Contains(mv, []byte("\nts_full.m3u8\n")) {
		t.Fatalf("ts.m3u8: %d %v\n%s", resp.StatusCode, resp.Header, mv)
	}
	_, pl := get(t, http.DefaultClient, base+"ts_full.m3u8")
	if made() != 0 {
		t.Fatal("the playlist alone made files")
	}
	segs := tsSegRE.FindAllSubmatch(pl, -1)
	if len(segs) < 5 {
		t.Fatalf("ts_full.m3u8:\n%s", pl)
	}
	cc := map[uint16]byte{}
	var files [][]byte
	get200 := func(name string) []byte {
		t.Helper()
		resp, b := get(t, http.DefaultClient, base+name)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctypeTS || resp.Header.Get("Cache-Control") != cacheMedia {
			t.Fatalf("%s: %d %v", name, resp.StatusCode, resp.Header)
		}
		return b
	}
	fetch := func(name string) []byte {
		t.Helper()
		b := get200(name)
		pids := tsPackets(t, name, b, cc)
		if len(pids) < 4 { // PAT, PMT, video, audio
			t.Fatalf("%s: PIDs %v", name, pids)
		}
		files = append(files, b)
		return b
	}
	// A player starts three segments from the end.
	start := len(segs) - 3
	first := fetch(string(segs[start][1]))
	// What is listed, from the oldest kept on, is made at once; nothing newer.
	if n := made(); n < float64(start+1) || n > float64(len(segs)-2) {
		t.Fatalf("%v files made for the first request (segment %d of %d listed)", n, start, len(segs))
	}
	before := made()
	if again := get200(string(segs[start][1])); !bytes.Equal(again, first) {
		t.Fatal("a second request got other bytes")
	}
	if made() != before {
		t.Fatal("a file made again")
	}
	// The listed files after it, one each, when asked.
	for k, s := range segs[start+1:] {
		fetch(string(s[1]))
		if made() != before+float64(k+1) {
			t.Fatalf("%v files made for %d more", made()-before, k+1)
		}
	}
	before = made()
	// The next segment, made when asked.
	sub.push(synthGOPs(12000, 1, false)...)
	next, _ := strconv.Atoi(string(segs[len(segs)-1][2]))
	name := string(segs[0][1][:8]) + "_full_" + strconv.Itoa(next+1) + ".ts"
	waitUntil(t, "the next segment listed", func() bool {
		_, b := get(t, http.DefaultClient, base+"ts_full.m3u8")
		return bytes.Contains(b, []byte(name))
	})
	fetch(name)
	if made() != before+1 {
		t.Fatalf("%v files made for one more segment", made()-before)
	}
	checkTSStream(t, files)
	// Nobody asks for MPEG-TS: nothing more is made.
	sub.push(synthGOPs(14000, 2, false)...)
	waitUntil(t, "two more segments", func() bool {
		_, b := get(t, http.DefaultClient, base+"full.m3u8")
		return bytes.Contains(b, []byte("_full_"+strconv.Itoa(next+3)+".m4s"))
	})
	if made() != before+1 {
		t.Fatal("MPEG-TS made while nobody asked for it")
	}
	// Nobody at all: the stream stops after Linger, its MPEG-TS state with it.
	waitUntil(t, "the stream to stop", func() bool { return len(p.Streams()) == 0 })
}

// checkTSStream demuxes files as one MPEG-TS stream: H.264 and AAC tracks,
// an IDR picture first in each file, timestamps increasing across files.
func checkTSStream(t *testing.T, files [][]byte) {
	t.Helper()
	r := &mpegts.Reader{R: bytes.NewReader(bytes.Join(files, nil))}
	if err := r.Initialize(); err != nil {
		t.Fatal(err)
	}
	var video, audio int
	var lastDTS, lastAudio int64 = -1, -1
	for _, tr := range r.Tracks() {
		switch tr.Codec.(type) {
		case *tscodecs.H264:
			r.OnDataH264(tr, func(pts, dts int64, au [][]byte) error {
				if dts <= lastDTS || pts < dts {
					t.Errorf("video DTS %d after %d (PTS %d)", dts, lastDTS, pts)
				}
				lastDTS = dts
				video++
				return nil
			})
		case *tscodecs.MPEG4Audio:
			r.OnDataMPEG4Audio(tr, func(pts int64, aus [][]byte) error {
				if pts <= lastAudio {
					t.Errorf("audio PTS %d after %d", pts, lastAudio)
				}
				lastAudio = pts
				audio += len(aus)
				return nil
			})
		}
	}
	r.OnDecodeError(func(err error) { t.Errorf("decode: %v", err) })
	for {
		err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// 2 s segments: 50 pictures and ~86 AAC frames each.
	if n := len(files); video < 45*n || audio < 80*n {
		t.Errorf("%d pictures, %d audio frames in %d files", video, audio, n)
	}
}

// TestTSPlayAudioOnly: a stream without video offers ts_audio.m3u8.
func TestTSPlayAudioOnly(t *testing.T) {
	st := testStream(t, Config{})
	var frames []*av.Frame
	for _, f := range synthGOPs(0, 4, true) {
		if f.Kind == av.KindAudio {
			frames = append(frames, f)
		}
	}
	st.pushAll(frames)
	mv, err := st.tsPlayMultivariant()
	if err != nil || !bytes.Contains(mv, []byte("\nts_audio.m3u8\n")) || bytes.Contains(mv, []byte("RESOLUTION")) {
		t.Fatalf("%v\n%s", err, mv)
	}
	if !st.tsPlayOffered(Audio, fileMedia) || st.tsPlayOffered(Full, fileMedia) {
		t.Error("offered: want audio alone")
	}
	seg := st.seg.complete()[0]
	ts := st.tsPlayFile(seg, Audio)
	if ts == nil || !ts.done {
		t.Fatal("no audio MPEG-TS file")
	}
	if pids := tsPackets(t, "audio", ts.data, map[uint16]byte{}); len(pids) != 3 {
		t.Errorf("PIDs %v: want PAT, PMT, audio", pids)
	}
}

// TestTSPlaySteered: with content steering, ts.m3u8 carries it like
// index.m3u8: the steering tag, and its variant's pathway and stable id
// (ts_full: the redirector's clones give that variant's URI per server).
func TestTSPlaySteered(t *testing.T) {
	st := testStream(t, Config{Steering: func(app, name string) *Steering {
		return &Steering{Pathway: "relay-eu", HLS: "http://redirector.example/steer/hls/live/test?base=relay-eu"}
	}})
	st.pushAll(synthGOPs(0, 3, true))
	b, err := st.steerHLS(st.tsPlayMultivariant())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#EXT-X-CONTENT-STEERING:SERVER-URI=\"http://redirector.example/steer/hls/live/test?base=relay-eu\",PATHWAY-ID=\"relay-eu\"\n",
		`PATHWAY-ID="relay-eu",STABLE-VARIANT-ID="ts_full"` + "\nts_full.m3u8\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("ts.m3u8 lacks %q:\n%s", want, b)
		}
	}
	var pl playlist.Multivariant
	if err := pl.Unmarshal(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}

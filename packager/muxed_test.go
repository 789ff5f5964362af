package packager

import (
	"bytes"
	"strings"
	"testing"

	"github.com/Eyevinn/mp4ff/mp4"
)

// TestMuxedFiles: the muxed init segment has full's video as track 1 and
// the audio as track 2; a muxed segment holds every sample of full's and
// audio's shares of the segment, each fragment on its own track, with
// sequence numbers increasing through the file; the playlist lists the
// muxed files, without parts, like full's segments.
func TestMuxedFiles(t *testing.T) {
	for _, format := range []HLSFormat{HLSLowLatency, HLSFMP4} {
		t.Run(string(format), func(t *testing.T) {
			st := testStream(t, Config{Default: AppConfig{HLS: format}})
			st.pushAll(synthGOPs(0, 4, true))
			sess := st.seg.current()
			init, err := muxedInit(sess)
			if err != nil {
				t.Fatal(err)
			}
			seg := st.seg.complete()[1]
			data, err := muxedSegment(seg)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(seg.track(Full).data) + len(seg.track(Audio).data); len(data) != want {
				t.Errorf("muxed segment of %d bytes, want %d (full's and audio's)", len(data), want)
			}
			again, _ := muxedSegment(seg)
			if &again[0] != &data[0] {
				t.Error("the muxed segment is made again")
			}
			f, err := mp4.DecodeFile(bytes.NewReader(append(append([]byte{}, init...), data...)))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(f.Init.Moov.Traks); n != 2 {
				t.Fatalf("%d tracks in the init segment", n)
			}
			if f.Init.Moov.Traks[0].Tkhd.TrackID != 1 || f.Init.Moov.Traks[1].Tkhd.TrackID != 2 ||
				f.Init.Moov.Traks[0].Mdia.Hdlr.HandlerType != "vide" || f.Init.Moov.Traks[1].Mdia.Hdlr.HandlerType != "soun" {
				t.Fatal("tracks: want video 1, audio 2")
			}
			samples := map[uint32]int{}
			var seq uint32
			for _, fr := range f.Segments[0].Fragments {
				if fr.Moof.Mfhd.SequenceNumber <= seq {
					t.Errorf("sequence number %d after %d", fr.Moof.Mfhd.SequenceNumber, seq)
				}
				seq = fr.Moof.Mfhd.SequenceNumber
				for _, traf := range fr.Moof.Trafs {
					samples[traf.Tfhd.TrackID] += int(traf.Trun.SampleCount())
				}
			}
			want := func(r Rendition) int {
				one, err := mp4.DecodeFile(bytes.NewReader(append(append([]byte{}, sess.byRend[r].init...), seg.track(r).data...)))
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, fr := range one.Segments[0].Fragments {
					if fr.Moof.Traf.Tfhd.TrackID != trackID {
						t.Errorf("%s's own fragment renumbered", r)
					}
					n += int(fr.Moof.Traf.Trun.SampleCount())
				}
				return n
			}
			if samples[1] != want(Full) || samples[2] != want(Audio) || samples[1] == 0 || samples[2] == 0 {
				t.Errorf("samples by track %v, want %d video, %d audio", samples, want(Full), want(Audio))
			}
			pl, err := st.muxedPlaylist()
			if err != nil {
				t.Fatal(err)
			}
			body := string(pl)
			for _, bad := range []string{"#EXT-X-PART", "#EXT-X-PRELOAD-HINT", "#EXT-X-RENDITION-REPORT", "_full_"} {
				if strings.Contains(body, bad) {
					t.Errorf("muxed playlist has %s:\n%s", bad, body)
				}
			}
			if !strings.Contains(body, sess.id+"_muxed_init.mp4") || !strings.Contains(body, sess.id+"_muxed_1.m4s") {
				t.Errorf("muxed playlist:\n%s", body)
			}
		})
	}
}

// TestParseMuxed: the muxed files' names; no parts, no TS, no DASH.
func TestParseMuxed(t *testing.T) {
	for file, want := range map[string]fileReq{
		"muxed.m3u8":              {kind: fileMedia, rend: Full, muxed: true},
		"0123abcd_muxed_init.mp4": {kind: fileInit, rend: Full, sid: "0123abcd", muxed: true},
		"0123abcd_muxed_12.m4s":   {kind: fileSegment, rend: Full, sid: "0123abcd", n: 12, muxed: true},
	} {
		got, ok := parseFile("hls", file)
		if !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", file, got, ok, want)
		}
	}
	for _, file := range []string{"0123abcd_muxed_12.0.m4s", "0123abcd_muxed_12.ts", "0123abcd_muxed_x.m4s"} {
		if _, ok := parseFile("hls", file); ok {
			t.Errorf("%s parsed", file)
		}
	}
	if _, ok := parseFile("dash", "0123abcd_muxed_1.m4s"); ok {
		t.Error("a DASH muxed file parsed")
	}
}

// FuzzRenumber: renumbering any bytes never panics nor writes outside them,
// and what it accepts walks as boxes again.
func FuzzRenumber(f *testing.F) {
	s := testSegmenter(true, false)
	for _, fr := range synthGOPs(0, 2, true) {
		s.push(fr)
	}
	seg := s.complete()[0]
	f.Add(append([]byte{}, seg.track(Audio).parts[0].data...))
	f.Add([]byte{0, 0, 0, 8, 'm', 'o', 'o', 'f'})
	f.Add([]byte{0, 0, 0, 16, 'm', 'o', 'o', 'f', 0, 0, 0, 8, 't', 'r', 'a', 'f'})
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := len(b)
		if _, err := renumber(b, 2, 7); err == nil {
			if err := walkBoxes(b, func(string, []byte) error { return nil }); err != nil {
				t.Fatalf("renumbered bytes no longer walk: %v", err)
			}
		}
		if len(b) != orig {
			t.Fatal("length changed")
		}
	})
}

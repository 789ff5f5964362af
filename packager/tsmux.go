package packager

import (
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
	tscodecs "github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts/codecs"
	"github.com/relaymesh/relaymesh/internal/av"
)

// tsOffset is added to every MPEG-TS timestamp (90 kHz) so that the PCR,
// which runs a little ahead of the DTS, never goes negative.
const tsOffset = 10 * 90000

// tsSegment is the MPEG-TS version of one segment of one rendition: video
// (unless Audio) with the audio muxed in.
type tsSegment struct {
	w     *mpegts.Writer
	out   appendWriter
	video *mpegts.Track
	audio *mpegts.Track
	data  []byte // what is written so far; append-only
	done  bool
	err   bool
}

func (s *segmenter) newTSSegment(r Rendition) *tsSegment {
	ts := &tsSegment{}
	var tracks []*mpegts.Track
	if r != Audio && s.sess.vc != nil {
		ts.video = &mpegts.Track{Codec: &tscodecs.H264{}}
		tracks = append(tracks, ts.video)
	}
	if s.sess.ac != nil {
		ts.audio = &mpegts.Track{Codec: &tscodecs.MPEG4Audio{Config: s.sess.ac.conf}}
		tracks = append(tracks, ts.audio)
	}
	ts.w = &mpegts.Writer{W: &ts.out, Tracks: tracks}
	if err := ts.w.Initialize(); err != nil {
		s.log.Error("mpeg-ts writer", "err", err)
		ts.err = true
		return ts
	}
	if _, err := ts.w.WriteTables(); err != nil {
		ts.err = true
	}
	ts.data = ts.out.b
	return ts
}

func (s *segmenter) writeTSVideo(ts *tsSegment, dts int64, f *av.Frame) {
	if ts.err || ts.video == nil {
		return
	}
	nalus := s.nalus[:0]
	if f.Keyframe {
		// RTMP carries SPS and PPS only in the sequence header; a TS decoder
		// needs them in band before every IDR picture.
		nalus = append(nalus, s.sess.vc.sps...)
		nalus = append(nalus, s.sess.vc.pps...)
	}
	nalus, err := splitAVCC(nalus, f.Payload[5:], s.sess.vc.nalLen)
	s.nalus = nalus[:0]
	if err != nil || len(nalus) == 0 {
		return
	}
	d := dts*90 + tsOffset
	if err := ts.w.WriteH264(ts.video, d+int64(f.CTS)*90, d, nalus); err != nil {
		ts.err = true
	}
	ts.data = ts.out.b
}

func (s *segmenter) writeTSAudio(ts *tsSegment, dts uint64, au []byte) {
	if ts.err || ts.audio == nil {
		return
	}
	pts := int64(dts)*90000/int64(s.sess.ac.sampleRate) + tsOffset
	if err := ts.w.WriteMPEG4Audio(ts.audio, pts, [][]byte{au}); err != nil {
		ts.err = true
	}
	ts.data = ts.out.b
}

func (ts *tsSegment) finish() { ts.done = true }

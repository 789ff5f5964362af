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
	out  appendWriter
	data []byte // what is written so far; append-only
	done bool
}

// tsMuxer writes the MPEG-TS segments of one rendition. One writer serves
// the whole session, so that continuity counters run on across segments.
type tsMuxer struct {
	w     *mpegts.Writer
	out   switchWriter
	video *mpegts.Track
	audio *mpegts.Track
	err   bool
}

// switchWriter sends writes to the segment being made.
type switchWriter struct{ seg *tsSegment }

func (w *switchWriter) Write(p []byte) (int, error) {
	w.seg.out.b = append(w.seg.out.b, p...)
	w.seg.data = w.seg.out.b
	return len(p), nil
}

func (s *segmenter) newTSMuxer(r Rendition) *tsMuxer {
	m, err := newTSWriter(s.sess, r)
	if err != nil {
		s.log.Error("mpeg-ts writer", "err", err)
		m.err = true
	}
	return m
}

// newTSWriter returns the MPEG-TS writer of rendition r of sess: its video
// (unless r is Audio) and the audio.
func newTSWriter(sess *session, r Rendition) (*tsMuxer, error) {
	m := &tsMuxer{}
	var tracks []*mpegts.Track
	if r != Audio && sess.vc != nil {
		m.video = &mpegts.Track{Codec: &tscodecs.H264{}}
		tracks = append(tracks, m.video)
	}
	if sess.ac != nil {
		m.audio = &mpegts.Track{Codec: &tscodecs.MPEG4Audio{Config: sess.ac.conf}}
		tracks = append(tracks, m.audio)
	}
	m.w = &mpegts.Writer{W: &m.out, Tracks: tracks}
	return m, m.w.Initialize()
}

// startTS begins the MPEG-TS segment of rendition r with the PAT and PMT.
func (s *segmenter) startTS(r Rendition) *tsSegment {
	m := s.sess.ts[r]
	if m == nil {
		m = s.newTSMuxer(r)
		s.sess.ts[r] = m
	}
	seg := &tsSegment{}
	m.out.seg = seg
	if !m.err {
		if _, err := m.w.WriteTables(); err != nil {
			m.err = true
		}
	}
	return seg
}

func (s *segmenter) writeTSVideo(r Rendition, dts int64, f *av.Frame) {
	m := s.sess.ts[r]
	if m == nil || m.err || m.video == nil {
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
	if err := m.w.WriteH264(m.video, d+int64(f.CTS)*90, d, nalus); err != nil {
		m.err = true
	}
}

func (s *segmenter) writeTSAudio(r Rendition, dts uint64, au []byte) {
	m := s.sess.ts[r]
	if m == nil || m.err || m.audio == nil {
		return
	}
	pts := int64(dts)*90000/int64(s.sess.ac.sampleRate) + tsOffset
	if err := m.w.WriteMPEG4Audio(m.audio, pts, [][]byte{au}); err != nil {
		m.err = true
	}
}

func (ts *tsSegment) finish() { ts.done = true }

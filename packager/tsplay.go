package packager

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/Eyevinn/mp4ff/mp4"
)

// The MPEG-TS playlist (ts.m3u8) is for players that cannot play fMP4 HLS,
// or not live fMP4 (GStreamer's legacy hlsdemux times fMP4 segments by
// their place in the playlist, see docs/hls-dash.md): every stream offers
// it beside the fMP4 ladder. ts.m3u8 is a multivariant playlist with one
// variant, ts_full.m3u8: full's video with the audio muxed in, in MPEG-TS
// segments named like those of apps configured mpegts
// ({sid}_full_{n}.ts), on the same media sequence as full.m3u8 (ts_audio.m3u8
// and {sid}_audio_{n}.ts for a stream without video). In an app configured
// mpegts these are the files the segmenter makes anyway. Elsewhere they are
// made lazily, from the segments' own fMP4 fragments, on the first request
// for each (one writer per session, in segment order, so that continuity
// counters run on from one file to the next) and kept with the segment for
// every later reader: nothing is made for a stream nobody plays this way,
// and nothing more once nobody asks (the stream itself stops after Linger
// without requests, as always).

// tsPlayName is the multivariant MPEG-TS playlist's file name; its media
// playlist is tsPlayPrefix + rendition + ".m3u8".
const (
	tsPlayName   = "ts.m3u8"
	tsPlayPrefix = "ts_"
)

// tsPlayRendition returns the rendition whose video (with the audio) the
// MPEG-TS playlist of sess carries: Full, or Audio for a stream without
// video; ok is false when sess has neither.
func tsPlayRendition(sess *session) (Rendition, bool) {
	switch {
	case sess == nil:
		return 0, false
	case sess.vc != nil && sess.byRend[Full] != nil:
		return Full, true
	case sess.audio != nil:
		return Audio, true
	}
	return 0, false
}

// tsPlayOffered reports whether ts.m3u8 (kind fileMultivariant) or the
// MPEG-TS media playlist of rendition r is served for the current session;
// st.mu is held.
func (st *stream) tsPlayOffered(r Rendition, kind fileKind) bool {
	tr, ok := tsPlayRendition(st.seg.current())
	return ok && (kind == fileMultivariant || tr == r)
}

// tsPlayPlaylist renders ts_{r}.m3u8: the segments of full.m3u8 (or
// audio.m3u8), MPEG-TS, without parts; st.mu is held and there is at least
// one complete segment.
func (st *stream) tsPlayPlaylist(r Rendition) ([]byte, error) { return st.renderMedia(r, mediaTS) }

// tsPlayMultivariant renders ts.m3u8; st.mu is held and there is at least
// one complete segment.
func (st *stream) tsPlayMultivariant() ([]byte, error) {
	sess := st.seg.current()
	r, ok := tsPlayRendition(sess)
	if !ok {
		return nil, errNoTSPlay
	}
	var body bytes.Buffer
	body.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-INDEPENDENT-SEGMENTS\n")
	peak, avg := st.seg.bandwidth(r)
	codecs := ""
	if r != Audio {
		apeak, aavg := st.seg.bandwidth(Audio)
		peak, avg = peak+apeak, avg+aavg
		codecs = sess.byRend[r].codec
	}
	if a := sess.audio; a != nil {
		if codecs != "" {
			codecs += ","
		}
		codecs += a.codec
	}
	// MPEG-TS costs some 5-10 % more than the fMP4 bytes measured.
	peak, avg = max(peak*11/10, 1), max(avg*11/10, 1)
	body.WriteString("#EXT-X-STREAM-INF:BANDWIDTH=" + strconv.Itoa(peak) + ",AVERAGE-BANDWIDTH=" + strconv.Itoa(avg) + `,CODECS="` + codecs + `"`)
	if r != Audio {
		body.WriteString(",RESOLUTION=" + strconv.Itoa(sess.vc.width) + "x" + strconv.Itoa(sess.vc.height))
	}
	body.WriteString("\n" + tsPlayPrefix + r.String() + ".m3u8\n")
	return body.Bytes(), nil
}

var errNoTSPlay = errors.New("packager: no MPEG-TS playlist")

// tsRemux makes the MPEG-TS files of a session from its fMP4 fragments.
type tsRemux struct {
	r    Rendition
	mux  *tsMuxer
	next uint64 // the number after the newest segment made
}

// tsPlayFile returns the MPEG-TS file of rendition r of the complete
// segment seg, made on the first call (with every kept segment of its
// session before it that is not made yet, in order), or nil; st.mu is
// held.
func (st *stream) tsPlayFile(seg *segment, r Rendition) *tsSegment {
	if ts := seg.ts[r]; ts != nil || !seg.done {
		return ts
	}
	sess := seg.sess
	if tr, ok := tsPlayRendition(sess); !ok || tr != r {
		return nil
	}
	rx := sess.remux
	if rx == nil {
		m, err := newTSWriter(sess, r)
		if err != nil {
			st.log.Error("mpeg-ts writer", "err", err)
			return nil
		}
		rx = &tsRemux{r: r, mux: m}
		sess.remux = rx
	}
	for _, s := range st.seg.kept() {
		// Of this session, complete, not made yet, up to seg: in order,
		// from the oldest kept on the first time, from the newest made
		// on later (a segment older than that one cannot be missing:
		// the guard keeps the writer's counters in order).
		if s.sess != sess || !s.done || s.ts[r] != nil || s.msn > seg.msn || (s.msn < rx.next && s != seg) {
			continue
		}
		out, err := rx.remux(s)
		if err != nil {
			st.log.Warn("mpeg-ts remux", "segment", s.msn, "err", err)
			return nil
		}
		s.ts[r] = out
		rx.next = max(rx.next, s.msn+1)
		st.p.m.segments.WithLabelValues("ts").Inc()
	}
	return seg.ts[r]
}

// remux writes segment seg as one MPEG-TS file: the tables, then the
// samples of the video (unless r is Audio) and audio in decode order,
// the video's first sample first.
func (rx *tsRemux) remux(seg *segment) (*tsSegment, error) {
	m := rx.mux
	if m.err {
		return nil, errNoTSPlay
	}
	var video, audio []mp4.FullSample
	var vt, at *track
	size := 0
	if rx.r != Audio {
		vt = seg.sess.byRend[rx.r]
		ts := seg.track(rx.r)
		if vt == nil || ts == nil {
			return nil, errNoTSPlay
		}
		var err error
		if video, err = fragmentSamples(ts.data); err != nil {
			return nil, err
		}
		size += len(ts.data)
	}
	if at = seg.sess.audio; at != nil {
		ts := seg.track(Audio)
		var err error
		if audio, err = fragmentSamples(ts.data); err != nil {
			return nil, err
		}
		size += len(ts.data)
	}
	out := &tsSegment{}
	out.out.b = make([]byte, 0, size+size/8+4096)
	m.out.seg = out
	if _, err := m.w.WriteTables(); err != nil {
		m.err = true
		return nil, err
	}
	vc := seg.sess.vc
	var nalus [][]byte
	vi, ai := 0, 0
	for vi < len(video) || ai < len(audio) {
		// Audio first when it is earlier, but never before the video's
		// first sample: the first write picks the track carrying the PCR.
		useAudio := ai < len(audio) && (vi >= len(video) || vi > 0 &&
			uint64(audio[ai].DecodeTime)*videoTimescale/uint64(at.timescale) < video[vi].DecodeTime)
		if useAudio {
			a := &audio[ai]
			ai++
			pts := int64(a.DecodeTime)*90000/int64(at.timescale) + tsOffset
			if err := m.w.WriteMPEG4Audio(m.audio, pts, [][]byte{a.Data}); err != nil {
				m.err = true
				return nil, err
			}
			continue
		}
		v := &video[vi]
		vi++
		nalus = nalus[:0]
		if v.IsSync() {
			nalus = append(nalus, vc.sps...)
			nalus = append(nalus, vc.pps...)
		}
		var err error
		nalus, err = splitAVCC(nalus, v.Data, 4)
		if err != nil || len(nalus) == 0 {
			continue
		}
		d := int64(v.DecodeTime) + tsOffset
		if err := m.w.WriteH264(m.video, d+int64(v.CompositionTimeOffset), d, nalus); err != nil {
			m.err = true
			return nil, err
		}
	}
	out.done = true
	m.out.seg = nil
	return out, nil
}

// fragmentSamples returns the samples of the fMP4 fragments b (moof+mdat
// boxes of one track, as the fragmenter writes them).
func fragmentSamples(b []byte) ([]mp4.FullSample, error) {
	if len(b) == 0 {
		return nil, nil
	}
	f, err := mp4.DecodeFile(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	trex := mp4.CreateTrex(trackID)
	var out []mp4.FullSample
	for _, s := range f.Segments {
		for _, fr := range s.Fragments {
			ss, err := fr.GetFullSamples(trex)
			if err != nil {
				return nil, err
			}
			out = append(out, ss...)
		}
	}
	return out, nil
}

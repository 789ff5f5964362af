package packager

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/Eyevinn/mp4ff/mp4"
)

// The muxed HLS playlist (muxed.m3u8) offers full's video with the audio in
// the same fMP4 segments: one playlist and one segment per segment duration
// instead of two of each, and sound for players that do not support
// separate audio renditions (EXT-X-MEDIA). It is not part of index.m3u8's
// ladder (players there get the separate audio rendition): a player is
// pointed at it directly. Its files are made from the tracks' own fragments
// on the first request for each (a copy of full's and audio's bytes, the
// audio fragments renumbered as track 2), kept with the segment and shared
// by every later reader; nobody asking costs nothing.

// muxedName is the file-name element of the muxed files.
const muxedName = "muxed"

// muxedTracks returns the tracks of a muxed file of sess: full's video and
// the audio, whichever the session has, in that order (track ids 1, 2).
func muxedTracks(sess *session) []*track {
	var out []*track
	if t := sess.byRend[Full]; t != nil {
		out = append(out, t)
	}
	if t := sess.audio; t != nil {
		out = append(out, t)
	}
	return out
}

// muxedInit returns the init segment of the muxed files of sess, made once;
// st.mu is held.
func muxedInit(sess *session) ([]byte, error) {
	if sess.muxInit != nil {
		return sess.muxInit, nil
	}
	tracks := muxedTracks(sess)
	if len(tracks) == 0 {
		return nil, errNoMuxed
	}
	if len(tracks) == 1 {
		sess.muxInit = tracks[0].init
		return sess.muxInit, nil
	}
	init := mp4.CreateEmptyInit()
	for _, t := range tracks {
		one, err := mp4.DecodeFile(bytes.NewReader(t.init))
		if err != nil || one.Init == nil || len(one.Init.Moov.Traks) != 1 {
			return nil, errors.Join(errNoMuxed, err)
		}
		trak := one.Init.Moov.Traks[0]
		id := uint32(len(init.Moov.Traks) + 1)
		trak.Tkhd.TrackID = id
		init.Moov.AddChild(trak)
		init.Moov.Mvex.AddChild(mp4.CreateTrex(id))
		init.Moov.Mvhd.NextTrackID = id + 1
	}
	b, err := encodeBox(init)
	if err != nil {
		return nil, err
	}
	sess.muxInit = b
	return b, nil
}

var errNoMuxed = errors.New("packager: no muxed file")

// muxedSegment returns the muxed file of the complete segment seg, made on
// the first call; st.mu is held. The fragments of the tracks are
// interleaved by time (part by part when the tracks have parts), and every
// fragment is renumbered: its track id (1 video, 2 audio) and its sequence
// number (increasing through the file, and from one segment to the next).
func muxedSegment(seg *segment) ([]byte, error) {
	if seg.muxed != nil {
		return seg.muxed, nil
	}
	tracks := muxedTracks(seg.sess)
	if len(tracks) == 0 {
		return nil, errNoMuxed
	}
	type frag struct {
		data  []byte
		start float64 // seconds into the segment
		id    uint32
	}
	var frags []frag
	size := 0
	for k, t := range tracks {
		ts := seg.tracks[trackIndex(seg.sess, t)]
		size += len(ts.data)
		if len(ts.parts) == 0 {
			frags = append(frags, frag{data: ts.data, id: uint32(k + 1)})
			continue
		}
		var at float64
		for _, p := range ts.parts {
			frags = append(frags, frag{data: p.data, start: at, id: uint32(k + 1)})
			at += p.dur.Seconds()
		}
	}
	// Stable by start: video first at equal times.
	for i := 1; i < len(frags); i++ {
		for j := i; j > 0 && frags[j].start < frags[j-1].start; j-- {
			frags[j], frags[j-1] = frags[j-1], frags[j]
		}
	}
	out := make([]byte, 0, size)
	seq := uint32(seg.msn) << 10
	for _, f := range frags {
		off := len(out)
		out = append(out, f.data...)
		n, err := renumber(out[off:], f.id, seq+1)
		if err != nil {
			return nil, err
		}
		seq += n
	}
	seg.muxed = out
	return out, nil
}

// renumber sets the track id of every traf and the sequence number of every
// mfhd in the fragments b (moof+mdat boxes, as the fragmenter writes them),
// counting sequence numbers from seq; it returns how many moofs it saw.
func renumber(b []byte, id, seq uint32) (uint32, error) {
	var n uint32
	err := walkBoxes(b, func(typ string, box []byte) error {
		if typ != "moof" {
			return nil
		}
		n++
		return walkBoxes(box[8:], func(typ string, child []byte) error {
			switch typ {
			case "mfhd":
				if len(child) < 16 {
					return errBadBox
				}
				binary.BigEndian.PutUint32(child[12:], seq+n-1)
			case "traf":
				return walkBoxes(child[8:], func(typ string, c []byte) error {
					if typ == "tfhd" {
						if len(c) < 16 {
							return errBadBox
						}
						binary.BigEndian.PutUint32(c[12:], id)
					}
					return nil
				})
			}
			return nil
		})
	})
	return n, err
}

var errBadBox = errors.New("packager: malformed box")

// walkBoxes calls fn for each box of b, in order, with the box's bytes
// (header included). Only 32-bit box sizes occur in what the packager
// writes; anything else is an error.
func walkBoxes(b []byte, fn func(typ string, box []byte) error) error {
	for len(b) > 0 {
		if len(b) < 8 {
			return errBadBox
		}
		size := int(binary.BigEndian.Uint32(b))
		if size < 8 || size > len(b) {
			return errBadBox
		}
		if err := fn(string(b[4:8]), b[:size]); err != nil {
			return err
		}
		b = b[size:]
	}
	return nil
}

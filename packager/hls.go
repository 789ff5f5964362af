package packager

import (
	"strconv"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
)

// audioGroup is the EXT-X-MEDIA group of the fMP4 audio playlist.
const audioGroup = "audio"

// partSegments is how many of the newest complete segments keep their parts
// listed in a low-latency playlist, besides the segment in progress. Parts
// are for players at the live edge (the spec lets a server drop them once
// they are no longer there, and asks it to by three target durations);
// hls.js needs the parts of the newest complete segment to start on parts.
// Listing no older ones also bounds what hls.js does when a viewer's link
// slows down: it fetches the parts of a segment one after another without
// looking at its throughput again, as long as the next part is listed, and
// only switches down after that (see docs/hls-dash.md).
const partSegments = 1

// mediaName is the file name of a segment (part < 0) or part of a rendition.
func mediaName(sid string, r Rendition, msn uint64, part int, ts bool) string {
	s := sid + "_" + r.String() + "_" + strconv.FormatUint(msn, 10)
	switch {
	case ts:
		return s + ".ts"
	case part >= 0:
		return s + "." + strconv.Itoa(part) + ".m4s"
	}
	return s + ".m4s"
}

func initName(sid string, r Rendition) string { return sid + "_" + r.String() + "_init.mp4" }

// trackDuration is the duration of a track's share of a segment.
func trackDuration(seg *segment, i int, t *track) time.Duration {
	ts := seg.tracks[i]
	if t.video || !ts.hasStart {
		return time.Duration(seg.dur) * time.Millisecond
	}
	return time.Duration(ts.dur) * time.Second / time.Duration(t.timescale)
}

// mediaPlaylist renders the media playlist of rendition r; st.mu is held and
// there is at least one complete segment.
func (st *stream) mediaPlaylist(r Rendition) ([]byte, error) {
	sess := st.seg.sess
	segs := st.seg.complete()
	t := sess.byRend[r]
	i := trackIndex(sess, t)
	ts := st.app_.HLS == HLSMPEGTS
	ll := t.parts

	pl := &playlist.Media{
		Version:             7,
		IndependentSegments: true,
		MediaSequence:       int(segs[0].msn),
	}
	if ts {
		pl.Version = 3
	} else {
		pl.Map = &playlist.MediaMap{URI: initName(sess.id, r)}
		// Every fMP4 playlist answers blocking reloads (_HLS_msn), with or
		// without parts: a player that switched to a rendition without parts
		// learns of its next segment as soon as it is complete.
		pl.ServerControl = &playlist.MediaServerControl{CanBlockReload: true}
	}
	if sess.disc > 0 {
		pl.DiscontinuitySequence = new(sess.disc)
	}
	for k, seg := range segs {
		d := trackDuration(seg, i, t)
		st.segMax = max(st.segMax, d)
		ms := &playlist.MediaSegment{Duration: d, URI: mediaName(sess.id, r, seg.msn, -1, ts)}
		if k == 0 || segs[k-1].msn+1 != seg.msn {
			wall := seg.wall.UTC()
			ms.DateTime = &wall
		}
		if ll && k >= len(segs)-partSegments {
			ms.Parts = st.hlsParts(sess.id, r, seg.msn, seg.tracks[i].parts)
		}
		pl.Segments = append(pl.Segments, ms)
	}
	pl.TargetDuration = int((st.segMax + time.Second - 1) / time.Second)
	if ll {
		pl.Version = 9
		next := st.seg.nextMSN
		nextPart := 0
		if cur := st.seg.cur; cur != nil && cur.sess == sess {
			pl.Parts = st.hlsParts(sess.id, r, cur.msn, cur.tracks[i].parts)
			next, nextPart = cur.msn, len(cur.tracks[i].parts)
		}
		pt := max(st.partMax[r], time.Millisecond)
		pl.PartInf = &playlist.MediaPartInf{PartTarget: pt}
		hold := 3 * pt
		pl.ServerControl.PartHoldBack = &hold
		pl.PreloadHint = &playlist.MediaPreloadHint{URI: mediaName(sess.id, r, next, nextPart, false)}
	}
	if !ts {
		pl.RenditionReport = st.renditionReports(r, segs)
	}
	return pl.Marshal()
}

// renditionReports tells a player following r where the other renditions
// of the stream stand (EXT-X-RENDITION-REPORT), so that it can ask for the
// right update of the one it switches to; st.mu is held.
func (st *stream) renditionReports(r Rendition, segs []*segment) []*playlist.MediaRenditionReport {
	sess := st.seg.sess
	last := segs[len(segs)-1]
	var out []*playlist.MediaRenditionReport
	for o := Full; o < numRenditions; o++ {
		t := sess.byRend[o]
		if o == r || t == nil {
			continue
		}
		rep := &playlist.MediaRenditionReport{URI: o.String() + ".m3u8", LastMSN: int(last.msn)}
		if t.parts {
			// The last part: of the segment in progress, or else of the
			// newest complete one.
			i := trackIndex(sess, t)
			if cur := st.seg.cur; cur != nil && cur.sess == sess && len(cur.tracks[i].parts) > 0 {
				rep.LastMSN, rep.LastPart = int(cur.msn), new(len(cur.tracks[i].parts)-1)
			} else if last.sess == sess && len(last.tracks[i].parts) > 0 {
				rep.LastPart = new(len(last.tracks[i].parts) - 1)
			}
		}
		out = append(out, rep)
	}
	return out
}

// hlsParts lists parts, raising the rendition's PART-TARGET to the longest
// part seen (rounded up to the 10 µs the playlist prints).
func (st *stream) hlsParts(sid string, r Rendition, msn uint64, parts []*part) []*playlist.MediaPart {
	out := make([]*playlist.MediaPart, len(parts))
	for k, p := range parts {
		d := (p.dur + 10*time.Microsecond - 1).Truncate(10 * time.Microsecond)
		st.partMax[r] = max(st.partMax[r], d)
		out[k] = &playlist.MediaPart{Duration: p.dur, URI: mediaName(sid, r, msn, k, false), Independent: p.independent}
	}
	return out
}

// multivariant renders index.m3u8; st.mu is held and there is at least one
// complete segment.
func (st *stream) multivariant() ([]byte, error) {
	sess := st.seg.sess
	ts := st.app_.HLS == HLSMPEGTS
	pl := &playlist.Multivariant{Version: 7, IndependentSegments: true}
	if ts {
		pl.Version = 3
	}
	var apeak, aavg int
	var acodec []string
	if a := sess.audio; a != nil {
		apeak, aavg = st.seg.bandwidth(a)
		acodec = []string{a.codec}
		if !ts && sess.vc != nil {
			uri := Audio.String() + ".m3u8"
			pl.Renditions = append(pl.Renditions, &playlist.MultivariantRendition{
				Type: playlist.MultivariantRenditionTypeAudio, GroupID: audioGroup, Name: "audio",
				Default: true, Autoselect: true, URI: &uri,
			})
		}
	}
	for r := Full; r <= Key; r++ {
		t := sess.byRend[r]
		if t == nil {
			continue
		}
		peak, avg := st.seg.bandwidth(t)
		peak, avg = max(peak+apeak, 1), max(avg+aavg, 1)
		v := &playlist.MultivariantVariant{
			Bandwidth:        peak,
			AverageBandwidth: &avg,
			Codecs:           append([]string{t.codec}, acodec...),
			Resolution:       strconv.Itoa(sess.vc.width) + "x" + strconv.Itoa(sess.vc.height),
			URI:              r.String() + ".m3u8",
		}
		if !ts && sess.audio != nil {
			v.Audio = audioGroup
		}
		pl.Variants = append(pl.Variants, v)
	}
	if sess.audio != nil {
		avg := max(aavg, 1)
		pl.Variants = append(pl.Variants, &playlist.MultivariantVariant{
			Bandwidth:        max(apeak, 1),
			AverageBandwidth: &avg,
			Codecs:           acodec,
			URI:              Audio.String() + ".m3u8",
		})
	}
	return pl.Marshal()
}

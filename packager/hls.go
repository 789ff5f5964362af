package packager

import (
	"strconv"
	"strings"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
)

// audioGroup is the EXT-X-MEDIA group of the fMP4 audio playlist.
const audioGroup = "audio"

// partSegments is how many of the newest complete segments keep their parts
// listed in a low-latency playlist, besides the segment in progress: about
// the three target durations the spec asks for. hls.js needs the newest
// complete segment's parts to start on parts, and a player that falls
// behind the edge (a link that slows down) goes on fetching the rest of its
// segment part by part; with fewer listed, hls.js refetched that whole
// segment once its parts left the playlist, a 10 s stall at 600 kbit/s
// (docs/hls-dash.md).
const partSegments = 3

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
// there is at least one complete segment. Segments of an earlier session
// (other codec parameters) follow one another with EXT-X-DISCONTINUITY and
// the init segment of their session (EXT-X-MAP).
func (st *stream) mediaPlaylist(r Rendition) ([]byte, error) { return st.renderMedia(r, mediaApp) }

// mediaForm is the form of a media playlist.
type mediaForm uint8

const (
	mediaApp   mediaForm = iota // the app's format (config: llhls, fmp4 or mpegts)
	mediaMuxed                  // muxed.m3u8 (muxed.go)
	mediaTS                     // ts_{rendition}.m3u8 (tsplay.go): MPEG-TS, no parts
)

// muxedPlaylist renders muxed.m3u8 (muxed.go): full's segments, the audio
// inside, without parts; st.mu is held and there is at least one complete
// segment.
func (st *stream) muxedPlaylist() ([]byte, error) { return st.renderMedia(Full, mediaMuxed) }

// muxedOffered reports whether muxed.m3u8 is served: fMP4 apps (MPEG-TS
// renditions carry their audio already) with video or audio; st.mu is
// held.
func (st *stream) muxedOffered() bool {
	sess := st.seg.current()
	return st.app_.HLS != HLSMPEGTS && sess != nil && len(muxedTracks(sess)) > 0
}

func (st *stream) renderMedia(r Rendition, form mediaForm) ([]byte, error) {
	sess := st.seg.current()
	segs := st.seg.complete()
	muxed := form == mediaMuxed
	if muxed && sess.byRend[r] == nil {
		r = Audio // an audio-only stream: the muxed files are its audio
	}
	t := sess.byRend[r]
	ts := st.app_.HLS == HLSMPEGTS || form == mediaTS
	ll := t.parts && !muxed && !ts
	uri := func(sid string, msn uint64) string {
		if muxed {
			return sid + "_" + muxedName + "_" + strconv.FormatUint(msn, 10) + ".m4s"
		}
		return mediaName(sid, r, msn, -1, ts)
	}
	initURI := func(sid string) string {
		if muxed {
			return sid + "_" + muxedName + "_init.mp4"
		}
		return initName(sid, r)
	}

	pl := &playlist.Media{
		Version:             7,
		IndependentSegments: true,
		MediaSequence:       int(segs[0].msn),
	}
	if ts {
		pl.Version = 3
	} else {
		pl.Map = &playlist.MediaMap{URI: initURI(segs[0].sess.id)}
		// Every fMP4 playlist answers blocking reloads (_HLS_msn), with or
		// without parts: a player that switched to a rendition without parts
		// learns of its next segment as soon as it is complete.
		pl.ServerControl = &playlist.MediaServerControl{CanBlockReload: true}
	}
	if d := segs[0].sess.disc; d > 0 {
		pl.DiscontinuitySequence = &d
	}
	var maps []string // the init segment after each discontinuity, in order
	for k, seg := range segs {
		tt := seg.sess.byRend[r]
		if tt == nil {
			continue // cannot happen: sessions listed together offer the same renditions
		}
		i := trackIndex(seg.sess, tt)
		d := trackDuration(seg, i, tt)
		st.segMax = max(st.segMax, d)
		ms := &playlist.MediaSegment{Duration: d, URI: uri(seg.sess.id, seg.msn)}
		disc := k > 0 && segs[k-1].sess != seg.sess
		if disc {
			ms.Discontinuity = true
			if !ts {
				maps = append(maps, initURI(seg.sess.id))
			}
		}
		if k == 0 || disc || segs[k-1].msn+1 != seg.msn {
			wall := seg.wall.UTC()
			ms.DateTime = &wall
		}
		if ll && k >= len(segs)-partSegments {
			ms.Parts = st.hlsParts(seg.sess.id, r, seg.msn, seg.tracks[i].parts)
		}
		pl.Segments = append(pl.Segments, ms)
	}
	pl.TargetDuration = int((st.segMax + time.Second - 1) / time.Second)
	// The parts and preload hint of the segment in progress belong to the
	// current session: behind a discontinuity when the newest listed
	// segment is of another.
	hintDisc := ""
	if ll && !st.ended && segs[len(segs)-1].sess != sess {
		hintDisc = initName(sess.id, r)
	}
	if st.app_.HLS == HLSLowLatency && form == mediaApp {
		// Every playlist of a low-latency ladder carries the same LL-HLS
		// tags, with or without parts of its own: the ladder's PART-TARGET
		// and a PART-HOLD-BACK of Config.PartHoldBack part targets (strict
		// players take the part target from the first playlist they load
		// and require PART-HOLD-BACK in every playlist then). A rendition without parts (key, lite) is ready a
		// segment at a time, so it holds back two target durations: what
		// PART-HOLD-BACK's own floor, twice the unit a playlist grows by,
		// gives for segments. (Three, HOLD-BACK's rule, kept a player that
		// takes its delay once from the first playlist it loads, as Shaka
		// Player does, three GOPs behind for the whole session when its
		// first bandwidth guess put it there; one and three parts stalled
		// it; docs/hls-dash.md.)
		pl.Version = 9
		pt := max(st.seg.longestPart(), st.p.cfg.PartTarget.Truncate(10*time.Microsecond), 10*time.Microsecond)
		pl.PartInf = &playlist.MediaPartInf{PartTarget: pt}
		hold := time.Duration(float64(pt) * st.p.cfg.PartHoldBack)
		if !ll {
			hold = max(hold, 2*time.Duration(pl.TargetDuration)*time.Second)
		}
		pl.ServerControl.PartHoldBack = &hold
	}
	if st.ended {
		pl.Endlist = true
	}
	if ll && !st.ended {
		next := st.seg.next()
		nextPart := 0
		if cur := st.seg.inProgress(); cur != nil && cur.sess == sess {
			parts := cur.track(r).parts
			pl.Parts = st.hlsParts(sess.id, r, cur.msn, parts)
			next, nextPart = cur.msn, len(parts)
		}
		pl.PreloadHint = &playlist.MediaPreloadHint{URI: mediaName(sess.id, r, next, nextPart, false)}
	}
	if !ts && !muxed {
		pl.RenditionReport = st.renditionReports(r, segs)
	}
	out, err := pl.Marshal()
	if err != nil {
		return nil, err
	}
	if len(maps) > 0 || hintDisc != "" {
		out = addMaps(out, maps, hintDisc)
	}
	return out, nil
}

// renditionReports tells a player following r where the other renditions
// of the stream stand (EXT-X-RENDITION-REPORT), so that it can ask for the
// right update of the one it switches to; st.mu is held.
func (st *stream) renditionReports(r Rendition, segs []*segment) []*playlist.MediaRenditionReport {
	sess := st.seg.current()
	last := segs[len(segs)-1]
	var out []*playlist.MediaRenditionReport
	for o := Full; o < numRenditions; o++ {
		t := sess.byRend[o]
		if o == r || t == nil || !st.inHLSLadder(o) {
			continue
		}
		rep := &playlist.MediaRenditionReport{URI: o.String() + ".m3u8", LastMSN: int(last.msn)}
		if t.parts {
			// The last part: of the segment in progress, or else of the
			// newest complete one.
			if cur := st.seg.inProgress(); cur != nil && cur.sess == sess && len(cur.track(o).parts) > 0 {
				rep.LastMSN, rep.LastPart = int(cur.msn), new(len(cur.track(o).parts)-1)
			} else if ts := last.track(o); ts != nil && len(ts.parts) > 0 {
				rep.LastPart = new(len(ts.parts) - 1)
			}
		}
		out = append(out, rep)
	}
	return out
}

// addMaps completes a marshalled media playlist with what gohlslib does not
// write: the EXT-X-MAP of each session after its EXT-X-DISCONTINUITY (in
// order, one URI per discontinuity), and, when hint is set, a discontinuity
// and the map hint before what follows the last complete segment (the parts
// and preload hint of a session that has no complete segment yet).
func addMaps(body []byte, maps []string, hint string) []byte {
	lines := strings.SplitAfter(string(body), "\n")
	lastURI := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "#EXTINF:") {
			lastURI = i + 1
		}
	}
	var b strings.Builder
	b.Grow(len(body) + (len(maps)+1)*64)
	k := 0
	for i, l := range lines {
		b.WriteString(l)
		if l == "#EXT-X-DISCONTINUITY\n" && k < len(maps) {
			b.WriteString(`#EXT-X-MAP:URI="` + maps[k] + "\"\n")
			k++
		}
		if i == lastURI && hint != "" {
			b.WriteString("#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"" + hint + "\"\n")
		}
	}
	return []byte(b.String())
}

// hlsParts lists parts.
func (st *stream) hlsParts(sid string, r Rendition, msn uint64, parts []*part) []*playlist.MediaPart {
	out := make([]*playlist.MediaPart, len(parts))
	for k, p := range parts {
		out[k] = &playlist.MediaPart{Duration: p.dur, URI: mediaName(sid, r, msn, k, false), Independent: p.independent}
	}
	return out
}

// inHLSLadder reports whether rendition r is offered in the multivariant
// playlist; st.mu is held. lite is left out while the stream has no
// disposable frames (lite then drops the tail of each GOP): for hls.js such
// a rung between full and key is a trap on a link that slows down — its
// emergency switch never fires from lite, so landing there costs a whole
// lite segment of stall (docs/hls-dash.md) — and a picture frozen for half
// of every GOP is a poor rendition to watch anyway. Its playlist stays
// served, and the DASH manifest keeps it.
func (st *stream) inHLSLadder(r Rendition) bool {
	if r != Lite {
		return true
	}
	t := st.seg.current().byRend[Lite]
	return t == nil || !t.filter.tailMode
}

// multivariant renders index.m3u8; st.mu is held and there is at least one
// complete segment.
func (st *stream) multivariant() ([]byte, error) {
	sess := st.seg.current()
	ts := st.app_.HLS == HLSMPEGTS
	pl := &playlist.Multivariant{Version: 7, IndependentSegments: true}
	if ts {
		pl.Version = 3
	}
	var apeak, aavg int
	var acodec []string
	if a := sess.audio; a != nil {
		apeak, aavg = st.seg.bandwidth(Audio)
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
		if t == nil || !st.inHLSLadder(r) {
			continue
		}
		peak, avg := st.seg.bandwidth(r)
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

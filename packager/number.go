package packager

import (
	"net/http"
	"strings"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
)

// The $Number$ manifest (number.mpd, and manifest.mpd for GStreamer's
// dashdemux2) addresses segments by their index on a fixed grid of the
// session's nominal segment duration (its first complete segment) from
// the Period's start, instead of listing them in a SegmentTimeline.
//
// Why: GStreamer's dashdemux2 (1.22) finds the segment of a live position
// in a SegmentTimeline with the first listed segment's start added to the
// offset within the segment (gst_mpd_client2_stream_seek's repeat index),
// so on any stream older than its window it starts far ahead of the live
// edge, waits for a segment that will not exist for tens of seconds, and
// jumps again at every manifest update. With a duration-based template it
// computes the index from the clock alone, which is right as long as the
// segments keep the grid: the usual encoder with a fixed GOP (every
// keyframe cuts a segment of the same length). Segment n is the one that
// starts within half a nominal duration of n × duration; a stream whose
// GOP varies leaves some indexes without a segment (404) for such clients.

// numberRendition reports whether the $Number$ manifest offers video
// rendition r: full only. key holds one picture for a whole segment (and
// lite holds the pictures it keeps past a frame's duration: left out for
// the same reason, not tried). GStreamer's adaptive demuxer times a picture by the frame
// rate of the stream's SPS (40 ms at 25 fps), not by its sample duration,
// so it sees a hole after each one and sends the video sink a gap event;
// dashdemux2 starts on the lowest bandwidth (key), and a gap before the
// first decoded picture reaches playbin3's video sink ahead of any
// segment event: the sink then waits for the clock to reach the
// picture's media time, the age of the stream, before it shows anything
// (GST_DEBUG=basesink:5 shows "possibly waiting for clock to reach" that
// time after "gap event", with no "segment event" before it). With full
// alone it plays at once.
func numberRendition(r Rendition) bool { return r == Full }

// numbered turns tmpl into a $Number$ template on sess's nominal grid from
// pstart (ms), in milliseconds.
func numbered(tmpl *m.SegmentTemplateType, sess *session, pstart int64) {
	d := max(sess.nominal, 1)
	tmpl.Media = sess.tid + "_$RepresentationID$_d$Number$.m4s"
	tmpl.Timescale = m.Ptr(uint32(1000))
	tmpl.Duration = m.Ptr(uint32(d))
	tmpl.StartNumber = m.Ptr(uint32(0))
	tmpl.PresentationTimeOffset = m.Ptr(uint64(pstart))
	tmpl.SegmentTimeline = nil
}

// indexTarget returns the media time (ms) that index req.n names in its
// session, and the session's nominal duration; ok is false when the
// session is unknown or has no complete segment yet. st.mu is held.
func (st *stream) indexTarget(req fileReq) (sess *session, target, d int64, ok bool) {
	sess = st.seg.session(req.sid)
	if sess == nil || sess.nominal <= 0 || sess.byRend[req.rend] == nil {
		return nil, 0, 0, false
	}
	pstart := sess.start
	if sess.first {
		pstart = 0
	}
	return sess, pstart + int64(req.n)*sess.nominal, sess.nominal, true
}

// byIndex finds the segment a $Number$ request names; st.mu is held.
func (st *stream) byIndex(req fileReq) *segment {
	sess, target, d, ok := st.indexTarget(req)
	if !ok {
		return nil
	}
	for _, seg := range st.seg.kept() {
		if seg.sess == sess && absDiff(uint64(seg.start), uint64(target)) < uint64(d/2+d%2) {
			return seg
		}
	}
	return nil
}

// indexUpcoming reports whether a $Number$ request names a segment a little
// after the newest one's start; st.mu is held.
func (st *stream) indexUpcoming(req fileReq) bool {
	sess, target, d, ok := st.indexTarget(req)
	if !ok || st.ended || sess != st.seg.current() || len(st.seg.kept()) == 0 {
		return false
	}
	last := st.seg.newest().start
	return target > last && target <= last+3*d
}

// wantsNumber reports whether a manifest request gets the $Number$
// manifest: number.mpd, or manifest.mpd asked for by GStreamer (its HTTP
// source names itself in User-Agent), whose SegmentTimeline handling
// cannot play a live stream (see above).
func wantsNumber(r *http.Request, req fileReq) bool {
	return req.part == manifestNumber || strings.Contains(r.Header.Get("User-Agent"), "GStreamer")
}

// numberDelays sets the time-shift buffer of the $Number$ manifest to every
// complete segment kept (not only those a timeline would list) and the
// suggested presentation delay to all but the newest two segments of it.
// GStreamer's playbin3 buffers 30 s before it plays: starting that far
// behind the live edge, it finds most of that buffer already there and
// plays after some 15 s instead of 45.
func numberDelays(mpd *m.MPD, segs []*segment, segMax time.Duration) {
	var kept time.Duration
	for _, seg := range segs {
		if seg.done {
			kept += time.Duration(seg.dur) * time.Millisecond
		}
	}
	mpd.TimeShiftBufferDepth = dur(kept)
	if spd := kept - 2*segMax; spd > time.Duration(*mpd.SuggestedPresentationDelay) {
		mpd.SuggestedPresentationDelay = dur(spd)
	}
}

package packager

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
)

// dashTimeScheme is the UTCTiming scheme of the packager's time endpoint.
const dashTimeScheme = "urn:mpeg:dash:utc:http-iso:2014"

// baseURL is the scheme and host clients reach the packager at.
func (p *Packager) baseURL(r *http.Request) string {
	if p.cfg.PublicBaseURL != "" {
		return strings.TrimSuffix(p.cfg.PublicBaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if !validHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

// validHost accepts host[:port] made of the characters a host name or an
// IPv6 literal can have (the Host header is the client's to choose).
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-.:[]", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func dur(d time.Duration) *m.Duration { return m.Ptr(m.Duration(d)) }

// manifest renders the live DASH MPD; st.mu is held and there is at least
// one complete segment. Each session listed (a run of segments with the same
// codec parameters) is a Period of its own, starting at the session's first
// frame: a codec change mid-stream starts a new Period, with its own init
// segments, and the earlier one stays until its segments leave the window.
func (st *stream) manifest(base string) ([]byte, error) {
	segs := st.seg.complete()
	segMin := st.p.cfg.SegmentMinDuration
	ast := st.ast
	if ast.IsZero() {
		ast = st.p.now().Add(-time.Duration(st.seg.lastVideo) * time.Millisecond)
	}
	var window time.Duration
	for _, seg := range segs {
		window += time.Duration(seg.dur) * time.Millisecond
		st.segMax = max(st.segMax, time.Duration(seg.dur)*time.Millisecond)
	}

	mpd := m.NewMPD(m.DYNAMIC_TYPE)
	mpd.Profiles = m.ListOfProfilesType("urn:mpeg:dash:profile:isoff-live:2011")
	mpd.AvailabilityStartTime = m.DateTime(ast.UTC().Format("2006-01-02T15:04:05.000Z"))
	mpd.PublishTime = m.DateTime(st.p.now().UTC().Format("2006-01-02T15:04:05.000Z"))
	mpd.MinimumUpdatePeriod = dur(segMin)
	mpd.MinBufferTime = dur(2 * segMin)
	mpd.TimeShiftBufferDepth = dur(window)
	mpd.SuggestedPresentationDelay = dur(max(3*segMin, 2*st.segMax))
	mpd.MaxSegmentDuration = dur(st.segMax)
	mpd.UTCTimings = []*m.DescriptorType{{SchemeIdUri: dashTimeScheme, Value: base + "/dash/time"}}

	for k := 0; k < len(segs); {
		j := k + 1
		for j < len(segs) && segs[j].sess == segs[k].sess {
			j++
		}
		mpd.AppendPeriod(st.period(segs[k].sess, segs[k:j]))
		k = j
	}
	st.steerMPD(mpd, base) // steering.go
	var buf bytes.Buffer
	if _, err := mpd.Write(&buf, "  ", true); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// period is the Period of a session, listing segs (its listed segments).
func (st *stream) period(sess *session, segs []*segment) *m.Period {
	period := m.NewPeriod()
	period.Id = sess.id
	period.Start = dur(time.Duration(sess.start) * time.Millisecond)
	if sess.vc != nil {
		as := m.NewAdaptationSetWithParams("video", "video/mp4", true, 1)
		as.Id = m.Ptr(uint32(0))
		full := sess.byRend[Full]
		as.SegmentTemplate = st.template(sess, full, segs, uint64(sess.start)*90)
		as.MaxWidth, as.MaxHeight = uint32(sess.vc.width), uint32(sess.vc.height)
		for r := Full; r <= Key; r++ {
			t := sess.byRend[r]
			peak, _ := st.seg.bandwidth(r)
			rep := m.NewVideoRepresentation(r.String(), t.codec, "", "", max(peak, 1), sess.vc.width, sess.vc.height)
			as.AppendRepresentation(rep)
		}
		period.AppendAdaptationSet(as)
	}
	if a := sess.audio; a != nil {
		as := m.NewAdaptationSetWithParams("audio", "audio/mp4", true, 1)
		as.Id = m.Ptr(uint32(1))
		as.SegmentTemplate = st.template(sess, a, segs, uint64(sess.start)*uint64(a.timescale)/1000)
		peak, _ := st.seg.bandwidth(Audio)
		rep := m.NewAudioRepresentation(Audio.String(), a.codec, "", max(peak, 1), int(a.timescale))
		rep.AudioChannelConfigurations = []*m.DescriptorType{{
			SchemeIdUri: "urn:mpeg:dash:23003:3:audio_channel_configuration:2011",
			Value:       strconv.Itoa(sess.ac.channels),
		}}
		as.AppendRepresentation(rep)
		period.AppendAdaptationSet(as)
	}
	return period
}

// template is the SegmentTemplate of an adaptation set whose timing follows
// track t: a SegmentTimeline of the complete segments, addressed by $Time$.
func (st *stream) template(sess *session, t *track, segs []*segment, pto uint64) *m.SegmentTemplateType {
	tmpl := m.NewSegmentTemplate()
	tmpl.Media = sess.id + "_$RepresentationID$_t$Time$.m4s"
	tmpl.Initialization = sess.id + "_$RepresentationID$_init.mp4"
	tmpl.Timescale = m.Ptr(t.timescale)
	tmpl.PresentationTimeOffset = m.Ptr(pto)
	tl := m.NewSegmentTimeline()
	i := trackIndex(sess, t)
	var prevEnd uint64
	for k, seg := range segs {
		ts := seg.tracks[i]
		if !ts.hasStart || ts.dur == 0 {
			continue
		}
		var s *m.S
		if k > 0 && ts.start == prevEnd && len(tl.S) > 0 && tl.S[len(tl.S)-1].D == ts.dur {
			tl.S[len(tl.S)-1].R++
		} else {
			s = &m.S{T: m.Ptr(ts.start), D: ts.dur}
			tl.S = append(tl.S, s)
		}
		prevEnd = ts.start + ts.dur
	}
	tmpl.SegmentTimeline = tl
	return tmpl
}

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

// manifestDir is the directory the client asked for the manifest in, as it
// sent it (r.RequestURI: a middleware in front, such as the play gate that
// takes a token out of the path, changes only r.URL), so that relative
// segment addresses keep what the path carried. It falls back to the
// stream's own directory.
func manifestDir(r *http.Request, app, name string) string {
	own := "/dash/" + app + "/" + name + "/"
	p, _, _ := strings.Cut(r.RequestURI, "?")
	file := p[strings.LastIndexByte(p, '/')+1:]
	if !strings.HasPrefix(p, own) || (file != "manifest.mpd" && file != "number.mpd") || len(p) > 1024 ||
		strings.ContainsAny(p, "\\\"<>' \t\r\n") {
		return own
	}
	return strings.TrimSuffix(p, file)
}

// baseURL is the scheme and host clients reach the packager at: the
// configured PublicBaseURL, else the request's X-Forwarded-Proto and
// X-Forwarded-Host (a reverse proxy in front) or its own scheme and Host.
// Header values that are not a plain scheme or host[:port] are ignored.
func (p *Packager) baseURL(r *http.Request) string {
	if p.cfg.PublicBaseURL != "" {
		return strings.TrimSuffix(p.cfg.PublicBaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	switch strings.ToLower(firstValue(r.Header.Get("X-Forwarded-Proto"))) {
	case "http":
		scheme = "http"
	case "https":
		scheme = "https"
	}
	host := r.Host
	if fh := firstValue(r.Header.Get("X-Forwarded-Host")); validHost(fh) {
		host = fh
	}
	if !validHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

// firstValue is the first element of a comma-separated header value (the
// proxy nearest the client comes first).
func firstValue(v string) string {
	v, _, _ = strings.Cut(v, ",")
	return strings.TrimSpace(v)
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
//
// The manifest carries an absolute BaseURL, the directory of the manifest on
// this node (base is its scheme and host): a player that reached the
// manifest through a redirect (the redirector's /play answers 302) resolves
// the segment URLs against this node, not against the redirector.
func (st *stream) manifest(base, dir string) ([]byte, error) { return st.renderMPD(base, dir, false) }

// renderMPD renders the manifest for clients that reach the stream's
// directory at base+dir; number asks for $Number$ addressing on the
// session's nominal grid instead of a SegmentTimeline (number.go).
func (st *stream) renderMPD(base, dir string, number bool) ([]byte, error) {
	segs := st.seg.complete()
	segMin := st.p.cfg.SegmentMinDuration
	ast := st.ast
	if ast.IsZero() {
		ast = st.p.now().Add(-time.Duration(st.seg.lastVideoTime()) * time.Millisecond)
	}
	var window time.Duration
	for _, seg := range segs {
		window += time.Duration(seg.dur) * time.Millisecond
		st.segMax = max(st.segMax, time.Duration(seg.dur)*time.Millisecond)
	}

	var mpd *m.MPD
	if st.ended {
		// The stream ended: a static presentation of what is left, up to
		// the end of the last segment (Period@start keeps its media time).
		mpd = m.NewMPD(m.STATIC_TYPE)
		last := segs[len(segs)-1]
		mpd.MediaPresentationDuration = dur(time.Duration(last.start+last.dur) * time.Millisecond)
	} else {
		mpd = m.NewMPD(m.DYNAMIC_TYPE)
		mpd.AvailabilityStartTime = m.DateTime(ast.UTC().Format("2006-01-02T15:04:05.000Z"))
		mpd.MinimumUpdatePeriod = dur(segMin)
		mpd.TimeShiftBufferDepth = dur(window)
		mpd.SuggestedPresentationDelay = dur(dashDelay(segMin, st.segMax))
		if number {
			numberDelays(mpd, st.seg.kept(), st.segMax)
		}
		mpd.UTCTimings = []*m.DescriptorType{{SchemeIdUri: dashTimeScheme, Value: base + "/dash/time"}}
	}
	mpd.BaseURL = []*m.BaseURLType{{Value: m.AnyURI(base + dir)}}
	if st.lowLatency() {
		// The latency players aim for (dash.js takes it as its target and
		// catches up by playback rate): a second and a half behind the
		// wall clock, chunks being PartTarget long. No maximum: dash.js
		// seeks to the live point once it is more than max − target +
		// 0.5 s behind its target, aborting the segment it is loading; a
		// chunked segment's download gives it a throughput sample only when
		// it completes, so on a link that dropped under the rendition's
		// bitrate the seek threw away the one measurement that would have
		// moved it down, and it loaded the top rendition's new segment in
		// progress as slowly again (a 4 s max: 12 s stalls at 600 kbit/s).
		// Without one it falls back to its own 12 s.
		mpd.ServiceDescription = []*m.ServiceDescriptionType{{
			Latencies:     []*m.LatencyType{{Target: m.Ptr(uint32(1500)), Min: m.Ptr(uint32(1000))}},
			PlaybackRates: []*m.PlaybackRateType{{Min: 0.9, Max: 1.1}},
		}}
	}
	mpd.Profiles = m.ListOfProfilesType("urn:mpeg:dash:profile:isoff-live:2011")
	mpd.PublishTime = m.DateTime(st.p.now().UTC().Format("2006-01-02T15:04:05.000Z"))
	mpd.MinBufferTime = dur(2 * segMin)
	mpd.MaxSegmentDuration = dur(st.segMax)

	for k := 0; k < len(segs); {
		j := k + 1
		for j < len(segs) && segs[j].sess == segs[k].sess {
			j++
		}
		mpd.AppendPeriod(st.period(segs[k].sess, segs[k:j], number))
		k = j
	}
	st.steerMPD(mpd, base+dir) // steering.go
	var buf bytes.Buffer
	if _, err := mpd.Write(&buf, "  ", true); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// period is the Period of a session, listing segs (its listed segments).
func (st *stream) period(sess *session, segs []*segment, number bool) *m.Period {
	period := m.NewPeriod()
	period.Id = sess.period
	// The first session of a run starts at media time 0, the media clock
	// that availabilityStartTime anchors: every server of the mesh has the
	// same media times (they pass through unchanged), so every server
	// gives the same Period start, offset and timeline, wherever in the
	// stream its packager joined. A later session (a codec change seen by
	// this run) starts at its first frame.
	pstart := sess.start
	if sess.first {
		pstart = 0
	}
	period.Start = dur(time.Duration(pstart) * time.Millisecond)
	if sess.vc != nil {
		as := m.NewAdaptationSetWithParams("video", "video/mp4", true, 1)
		as.Id = m.Ptr(uint32(0))
		full := sess.byRend[Full]
		as.SegmentTemplate = st.template(sess, full, segs, uint64(pstart)*90)
		if number {
			numbered(as.SegmentTemplate, sess, pstart)
		}
		as.MaxWidth, as.MaxHeight = uint32(sess.vc.width), uint32(sess.vc.height)
		for r := Full; r <= Key; r++ {
			if number && !numberRendition(r) {
				continue
			}
			t := sess.byRend[r]
			peak, _ := st.seg.bandwidth(r)
			rep := m.NewVideoRepresentation(r.String(), t.codec, "", "", max(peak, 1), sess.vc.width, sess.vc.height)
			if t.parts && st.lowLatency() && !number {
				// full is written in chunks (its parts): a template of its
				// own, with the low-latency additions. lite and key come
				// whole when a segment ends: listing their segment in
				// progress would have a player at the latency target wait
				// for each one (tried: dash.js stalled on key).
				rep.SegmentTemplate = st.template(sess, full, segs, uint64(pstart)*90)
				st.chunked(sess, t, rep.SegmentTemplate)
			}
			as.AppendRepresentation(rep)
		}
		period.AppendAdaptationSet(as)
	}
	if a := sess.audio; a != nil {
		as := m.NewAdaptationSetWithParams("audio", "audio/mp4", true, 1)
		as.Id = m.Ptr(uint32(1))
		as.SegmentTemplate = st.template(sess, a, segs, uint64(pstart)*uint64(a.timescale)/1000)
		if number {
			numbered(as.SegmentTemplate, sess, pstart)
		} else if a.parts && st.lowLatency() {
			st.chunked(sess, a, as.SegmentTemplate)
		}
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

// lowLatency reports whether the manifest is low-latency DASH: the app asks
// for it, its segments are written in chunks (low-latency HLS parts) and
// the stream has not ended; st.mu is held.
// dashDelay is how far behind the live edge an MPD asks players to play
// (suggestedPresentationDelay): three of the shortest segments, or two of
// the longest seen, whichever is more.
func dashDelay(segMin, segMax time.Duration) time.Duration {
	return max(3*segMin, 2*segMax)
}

func (st *stream) lowLatency() bool {
	return st.app_.LowLatencyDASH && st.app_.HLS == HLSLowLatency && !st.ended
}

// chunked makes tmpl, the template of track t (whose segments are written
// in chunks, its parts), low-latency DASH: the segment in progress is listed
// at the end of the timeline (its start is known; its duration is taken to
// be that of the segment before it, corrected by the next manifest update),
// and availabilityTimeOffset lets a player ask for a segment as soon as its
// first chunk is out; the request is held and the segment streamed as its
// chunks come (chunked CMAF). availabilityTimeComplete="false" tells the
// player so. st.mu is held.
func (st *stream) chunked(sess *session, t *track, tmpl *m.SegmentTemplateType) {
	segMax := max(st.segMax, st.p.cfg.SegmentMinDuration)
	chunk := max(st.seg.longestPart(), st.p.cfg.PartTarget)
	if segMax <= chunk {
		return
	}
	ato := (segMax - chunk).Seconds()
	tmpl.AvailabilityTimeOffset = m.FloatInf64(float64(int(ato*1000)) / 1000)
	tmpl.AvailabilityTimeComplete = m.Ptr(false)
	cur := st.seg.inProgress()
	tl := tmpl.SegmentTimeline
	if cur == nil || cur.sess != sess || tl == nil || len(tl.S) == 0 {
		return
	}
	ts := cur.tracks[trackIndex(sess, t)]
	if !ts.hasStart {
		return
	}
	last := tl.S[len(tl.S)-1]
	end := *last.T + last.D*uint64(last.R+1)
	switch {
	case ts.start == end:
		last.R++
	case ts.start > end:
		tl.S = append(tl.S, &m.S{T: m.Ptr(ts.start), D: last.D})
	}
}

// template is the SegmentTemplate of an adaptation set whose timing follows
// track t: a SegmentTimeline of the complete segments, addressed by $Time$.
func (st *stream) template(sess *session, t *track, segs []*segment, pto uint64) *m.SegmentTemplateType {
	tmpl := m.NewSegmentTemplate()
	tmpl.Media = sess.tid + "_$RepresentationID$_t$Time$.m4s"
	tmpl.Initialization = sess.tid + "_$RepresentationID$_init.mp4"
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

package packager

import (
	"strings"
	"time"

	m "github.com/Eyevinn/dash-mpd/mpd"
)

// Steering tells the players of a stream where to ask which server to use
// (content steering; the redirector answers): the process gives it per
// stream through Config.Steering. The multivariant playlist then carries
// EXT-X-CONTENT-STEERING and every variant the server's PATHWAY-ID with a
// STABLE-VARIANT-ID (the media playlist's stem: full, lite, key, audio),
// and the MPD a ContentSteering element with an absolute BaseURL and
// Location whose serviceLocation is the pathway: the steering server
// clones the pathway for the other servers by those ids.
type Steering struct {
	Pathway string // this server's pathway: its id in the mesh
	HLS     string // steering manifest URL for HLS players (SERVER-URI)
	DASH    string // steering server URL for DASH players
	// DASHManifest, when set, is the MPD's Location: where DASH players
	// refresh the manifest, the steering server's redirect to a server that
	// is up (dash.js gives up refreshing when a refresh fails, so a
	// Location on this server ends the stream for its players if it dies).
	// Empty: the MPD on this server, with this server's pathway.
	DASHManifest string
}

// steeringFor returns the valid steering of app/name, or nil.
func (p *Packager) steeringFor(app, name string) *Steering {
	if p.cfg.Steering == nil {
		return nil
	}
	s := p.cfg.Steering(app, name)
	if s == nil || !validPathway(s.Pathway) || !validAttr(s.HLS) || !validAttr(s.DASH) || !validAttr(s.DASHManifest) {
		return nil
	}
	return s
}

// validPathway accepts the characters HLS allows in a PATHWAY-ID.
func validPathway(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// validAttr accepts a URL that can be written as a quoted playlist
// attribute: printable ASCII without '"', '<' or '>' (the XML encoder
// escapes what the MPD needs).
func validAttr(s string) bool {
	if len(s) > 2048 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>", c) >= 0 {
			return false
		}
	}
	return true
}

// steerHLS adds content steering to a rendered multivariant playlist.
func (st *stream) steerHLS(body []byte, err error) ([]byte, error) {
	s := st.p.steeringFor(st.app, st.name)
	if err != nil || s == nil || s.HLS == "" {
		return body, err
	}
	lines := strings.SplitAfter(string(body), "\n")
	var b strings.Builder
	b.Grow(len(body) + 64*len(lines))
	tag := `#EXT-X-CONTENT-STEERING:SERVER-URI="` + s.HLS + `",PATHWAY-ID="` + s.Pathway + "\"\n"
	tagged := false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "#EXT-X-STREAM-INF:"):
			stem := ""
			if i+1 < len(lines) {
				stem = strings.TrimSuffix(strings.TrimSpace(lines[i+1]), ".m3u8")
			}
			l = strings.TrimSuffix(l, "\n") + `,PATHWAY-ID="` + s.Pathway + `"`
			if validPathway(stem) {
				l += `,STABLE-VARIANT-ID="` + stem + `"`
			}
			l += "\n"
		case strings.HasPrefix(l, "#EXT-X-MEDIA:"):
			if _, rest, ok := strings.Cut(l, `URI="`); ok {
				if uri, _, ok := strings.Cut(rest, `"`); ok && validPathway(strings.TrimSuffix(uri, ".m3u8")) {
					l = strings.TrimSuffix(l, "\n") + `,STABLE-RENDITION-ID="` + strings.TrimSuffix(uri, ".m3u8") + "\"\n"
				}
			}
		}
		if !tagged && (strings.HasPrefix(l, "#EXT-X-MEDIA:") || strings.HasPrefix(l, "#EXT-X-STREAM-INF:")) {
			b.WriteString(tag)
			tagged = true
		}
		b.WriteString(l)
	}
	return []byte(b.String()), nil
}

// steerMPD adds content steering to an MPD being rendered for clients
// that reach the stream's directory at dir (scheme, host and path).
func (st *stream) steerMPD(mpd *m.MPD, dir string) {
	s := st.p.steeringFor(st.app, st.name)
	if s == nil || s.DASH == "" {
		return
	}
	if len(mpd.BaseURL) == 0 {
		mpd.BaseURL = append(mpd.BaseURL, &m.BaseURLType{Value: m.AnyURI(dir)})
	}
	for _, b := range mpd.BaseURL {
		if b.ServiceLocation == "" {
			b.ServiceLocation = s.Pathway
		}
	}
	if s.DASHManifest != "" {
		// No serviceLocation: no pathway clone replaces its host, so every
		// refresh asks the steering server.
		mpd.Location = append(mpd.Location, &m.LocationType{Value: s.DASHManifest})
	} else {
		mpd.Location = append(mpd.Location, &m.LocationType{ServiceLocation: s.Pathway, Value: dir + "manifest.mpd"})
	}
	mpd.ContentSteering = &m.ContentSteeringType{DefaultServiceLocation: s.Pathway, Value: s.DASH}
	if mpd.Type != nil && *mpd.Type == m.DYNAMIC_TYPE && len(mpd.Periods) > 0 {
		reloadEvent(mpd.Periods[len(mpd.Periods)-1])
		// Buffer for a move: dash.js retries a dead server's segment at
		// the same URL (3 × 1 s by default) before it takes the next
		// server, and plays suggestedPresentationDelay behind the wall
		// clock, where the newest listed segment is up to a segment and
		// the hops behind already: with a delay of the longest segment
		// plus those retries it has them buffered (with 2 s segments 5 s
		// instead of 4 s; low-latency DASH players follow the
		// ServiceDescription instead).
		if spd, sd := mpd.SuggestedPresentationDelay, mpd.MaxSegmentDuration; spd != nil && sd != nil && time.Duration(*spd) < time.Duration(*sd)+deadServerRetries {
			mpd.SuggestedPresentationDelay = m.Ptr(m.Duration(time.Duration(*sd) + deadServerRetries))
		}
	}
}

// deadServerRetries is how long dash.js's default retries of a failed
// segment last (3 attempts, 1 s apart).
const deadServerRetries = 3 * time.Second

// MPD reload events (ISO/IEC 23009-1 5.10.4, scheme
// urn:mpeg:dash:event:2012, value 1) in the live Period: a player that
// plays through one refreshes the manifest, choosing the location by its
// steering answer. They are what gets a dash.js player off a dead server:
// dash.js stops refreshing the manifest for good when one refresh fails
// (its retries go to the same URL and nothing blacklists a manifest
// location), so a player whose relay died plays out the segments it knew,
// from the next service location, and stalls there. An event sits
// reloadEventLead before the end of each of the newest reloadEvents listed
// segments; its id is its time, so a manifest that lists it again updates
// it and the player fires each once: a refresh more per segment played
// while refreshes work, and a refresh from the next server as soon as the
// player, after a failed refresh, plays through the segments it fetched
// from there.
const (
	reloadEventScheme = "urn:mpeg:dash:event:2012"
	reloadEventLead   = 500 // ms before a segment's end
	reloadEvents      = 3
)

// reloadEvent adds the MPD reload events to period, from the timeline of
// its first template that has one (none: a $Number$ manifest, which needs
// no refresh to go on).
func reloadEvent(period *m.Period) {
	var tmpl *m.SegmentTemplateType
	for _, as := range period.AdaptationSets {
		if t := as.SegmentTemplate; tmpl == nil && t != nil && t.SegmentTimeline != nil && len(t.SegmentTimeline.S) > 0 && t.Timescale != nil && *t.Timescale > 0 {
			tmpl = t
		}
	}
	if tmpl == nil {
		return
	}
	var pto uint64
	if tmpl.PresentationTimeOffset != nil {
		pto = *tmpl.PresentationTimeOffset
	}
	// The ends of the listed segments, newest last (at most reloadEvents).
	var ends []uint64
	for _, s := range tmpl.SegmentTimeline.S {
		if s.T == nil || s.D == 0 {
			return
		}
		for k, t := 0, *s.T; k <= max(s.R, 0) && k < 1000; k++ {
			t += s.D
			ends = append(ends, t)
			if len(ends) > reloadEvents {
				ends = ends[1:]
			}
		}
	}
	es := &m.EventStreamType{SchemeIdUri: reloadEventScheme, Value: "1", Timescale: m.Ptr(uint32(1000))}
	for _, e := range ends {
		if e <= pto {
			continue
		}
		ms := (e - pto) * 1000 / uint64(*tmpl.Timescale)
		if ms <= reloadEventLead {
			continue
		}
		at := ms - reloadEventLead
		es.Events = append(es.Events, &m.EventType{PresentationTime: at, Duration: 100, Id: m.Ptr(at)})
	}
	if len(es.Events) > 0 {
		period.EventStreams = append(period.EventStreams, es)
	}
}

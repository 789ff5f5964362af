package httpswarm

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
)

// Bounds on what a server may send us.
const (
	maxPlaylistBytes = 1 << 20 // a playlist or manifest
	maxEntries       = 10000   // segments, parts, variants, timeline entries
)

var errParse = errors.New("parse")

// variant is one rung of a ladder: an HLS media playlist or a DASH
// Representation.
type variant struct {
	Name      string // the playlist's base name without extension, or the Representation id
	Bandwidth int    // bits per second as advertised
	URI       string // HLS: absolute URL of the media playlist
}

// ladder is what a player can choose from.
type ladder struct {
	Video []variant // ascending bandwidth
	Audio *variant  // a separate audio rendition, if the ladder has one
	first int       // index in Video of the variant listed first (the default)
}

// hlsMedia is a parsed media playlist.
type hlsMedia struct {
	MSN0         uint64 // media sequence number of Segs[0]
	Target       time.Duration
	PartTarget   time.Duration // 0: no parts
	PartHoldBack time.Duration
	CanBlock     bool
	Endlist      bool
	Map          string    // absolute URL of the init segment ("" for MPEG-TS)
	Segs         []hlsSeg  // complete segments
	Tail         []hlsPart // parts of the segment in progress (MSN0+len(Segs))
}

type hlsSeg struct {
	URI   string
	Dur   time.Duration
	Parts []hlsPart
}

type hlsPart struct {
	URI         string
	Dur         time.Duration
	Independent bool
}

// resolve makes ref absolute against base.
func resolve(base *url.URL, ref string) (string, error) {
	if len(ref) > 4096 {
		return "", fmt.Errorf("%w: URI of %d bytes", errParse, len(ref))
	}
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("%w: URI %q: %v", errParse, ref, err)
	}
	r := base.ResolveReference(u)
	if r.Scheme != "http" && r.Scheme != "https" {
		return "", fmt.Errorf("%w: URI %q is not HTTP", errParse, ref)
	}
	return r.String(), nil
}

// rungName is the name a variant is reported under: the file name of its
// playlist without the extension.
func rungName(uri string) string {
	u, err := url.Parse(uri)
	if err == nil {
		uri = u.Path
	}
	b := path.Base(uri)
	return strings.TrimSuffix(b, path.Ext(b))
}

// audioOnly reports a variant whose codecs are all audio codecs.
func audioOnly(codecs []string) bool {
	if len(codecs) == 0 {
		return false
	}
	for _, c := range codecs {
		c = strings.ToLower(strings.TrimSpace(c))
		if !(strings.HasPrefix(c, "mp4a") || strings.HasPrefix(c, "ac-3") || strings.HasPrefix(c, "ec-3") ||
			strings.HasPrefix(c, "opus") || strings.HasPrefix(c, "flac") || strings.HasPrefix(c, "mp3")) {
			return false
		}
	}
	return true
}

// parseHLS reads a playlist fetched from base: a multivariant playlist
// gives a ladder; a media playlist a one-rung ladder and the playlist.
func parseHLS(base *url.URL, body []byte) (*ladder, *hlsMedia, error) {
	if len(body) > maxPlaylistBytes {
		return nil, nil, fmt.Errorf("%w: playlist of %d bytes", errParse, len(body))
	}
	pl, err := playlist.Unmarshal(body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: playlist: %v", errParse, err)
	}
	switch pl := pl.(type) {
	case *playlist.Multivariant:
		l, err := ladderOf(base, pl)
		return l, nil, err
	case *playlist.Media:
		m, err := mediaOf(base, pl)
		if err != nil {
			return nil, nil, err
		}
		return &ladder{Video: []variant{{Name: rungName(base.Path), URI: base.String()}}}, m, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown playlist type", errParse)
}

func ladderOf(base *url.URL, pl *playlist.Multivariant) (*ladder, error) {
	if len(pl.Variants) > maxEntries || len(pl.Renditions) > maxEntries {
		return nil, fmt.Errorf("%w: %d variants", errParse, len(pl.Variants))
	}
	l := &ladder{}
	var audioOnlyRungs []variant
	audioGroups := map[string]bool{}
	for _, v := range pl.Variants {
		u, err := resolve(base, v.URI)
		if err != nil {
			return nil, err
		}
		r := variant{Name: rungName(u), Bandwidth: v.Bandwidth, URI: u}
		if audioOnly(v.Codecs) {
			audioOnlyRungs = append(audioOnlyRungs, r)
			continue
		}
		l.Video = append(l.Video, r)
		if v.Audio != "" {
			audioGroups[v.Audio] = true
		}
	}
	if len(l.Video) == 0 {
		// An audio-only ladder is played as such.
		l.Video = audioOnlyRungs
	}
	if len(l.Video) == 0 {
		return nil, fmt.Errorf("%w: no variants", errParse)
	}
	firstURI := l.Video[0].URI
	sort.SliceStable(l.Video, func(i, j int) bool { return l.Video[i].Bandwidth < l.Video[j].Bandwidth })
	for i, v := range l.Video {
		if v.URI == firstURI {
			l.first = i
			break
		}
	}
	// The audio rendition of the variants' group: the default one, else the
	// first with a URI (one without a URI is muxed into the variants).
	for _, pick := range []bool{true, false} {
		for _, r := range pl.Renditions {
			if r.Type != playlist.MultivariantRenditionTypeAudio || !audioGroups[r.GroupID] || r.URI == nil || *r.URI == "" {
				continue
			}
			if pick && !r.Default {
				continue
			}
			u, err := resolve(base, *r.URI)
			if err != nil {
				return nil, err
			}
			l.Audio = &variant{Name: rungName(u), URI: u}
			return l, nil
		}
	}
	return l, nil
}

func mediaOf(base *url.URL, pl *playlist.Media) (*hlsMedia, error) {
	if len(pl.Segments) > maxEntries || len(pl.Parts) > maxEntries {
		return nil, fmt.Errorf("%w: %d segments", errParse, len(pl.Segments))
	}
	if pl.MediaSequence < 0 {
		return nil, fmt.Errorf("%w: media sequence %d", errParse, pl.MediaSequence)
	}
	m := &hlsMedia{
		MSN0:    uint64(pl.MediaSequence),
		Target:  time.Duration(pl.TargetDuration) * time.Second,
		Endlist: pl.Endlist,
	}
	if pl.PartInf != nil {
		m.PartTarget = pl.PartInf.PartTarget
	}
	if sc := pl.ServerControl; sc != nil {
		m.CanBlock = sc.CanBlockReload
		if sc.PartHoldBack != nil {
			m.PartHoldBack = *sc.PartHoldBack
		}
	}
	if pl.Map != nil {
		u, err := resolve(base, pl.Map.URI)
		if err != nil {
			return nil, err
		}
		m.Map = u
	}
	parts := func(ps []*playlist.MediaPart) ([]hlsPart, error) {
		var out []hlsPart
		for _, p := range ps {
			u, err := resolve(base, p.URI)
			if err != nil {
				return nil, err
			}
			if p.Duration <= 0 {
				return nil, fmt.Errorf("%w: part of duration %v", errParse, p.Duration)
			}
			out = append(out, hlsPart{URI: u, Dur: p.Duration, Independent: p.Independent})
		}
		return out, nil
	}
	total := 0
	for _, s := range pl.Segments {
		total += len(s.Parts)
		if total > maxEntries {
			return nil, fmt.Errorf("%w: more than %d parts", errParse, maxEntries)
		}
		u, err := resolve(base, s.URI)
		if err != nil {
			return nil, err
		}
		if s.Duration <= 0 {
			return nil, fmt.Errorf("%w: segment of duration %v", errParse, s.Duration)
		}
		ps, err := parts(s.Parts)
		if err != nil {
			return nil, err
		}
		m.Segs = append(m.Segs, hlsSeg{URI: u, Dur: s.Duration, Parts: ps})
	}
	tail, err := parts(pl.Parts)
	if err != nil {
		return nil, err
	}
	m.Tail = tail
	return m, nil
}

// pos is a place in a media playlist: a segment, and a part of it (0 when
// parts are not used).
type pos struct {
	MSN  uint64
	Part int
}

// item is what to fetch next from a media playlist.
type item struct {
	URI    string
	Dur    time.Duration // media time it adds
	IsPart bool
	Next   pos // where to go on afterwards
}

// lookup returns what is at p in m: a listed part when parts are used, else
// the whole segment (after a part of it, the rest of its duration). ok is
// false when p is not in the playlist yet; behind when it has left it.
func (m *hlsMedia) lookup(p pos, useParts bool, fetchedInSeg time.Duration) (it item, ok, behind bool) {
	if p.MSN < m.MSN0 {
		return item{}, false, true
	}
	idx := p.MSN - m.MSN0
	if idx < uint64(len(m.Segs)) {
		s := m.Segs[idx]
		if useParts && len(s.Parts) > 0 {
			if p.Part < len(s.Parts) {
				pt := s.Parts[p.Part]
				next := pos{p.MSN, p.Part + 1}
				if next.Part == len(s.Parts) {
					next = pos{p.MSN + 1, 0}
				}
				return item{URI: pt.URI, Dur: pt.Dur, IsPart: true, Next: next}, true, false
			}
			// The segment ended with fewer parts than we waited for.
			if fetchedInSeg > 0 {
				return m.lookup(pos{p.MSN + 1, 0}, useParts, 0)
			}
		}
		d := s.Dur - fetchedInSeg
		if d < 0 {
			d = 0
		}
		return item{URI: s.URI, Dur: d, Next: pos{p.MSN + 1, 0}}, true, false
	}
	if idx == uint64(len(m.Segs)) && useParts && p.Part < len(m.Tail) {
		pt := m.Tail[p.Part]
		return item{URI: pt.URI, Dur: pt.Dur, IsPart: true, Next: pos{p.MSN, p.Part + 1}}, true, false
	}
	return item{}, false, false
}

// normalize moves p past a complete segment whose parts it has all
// passed (the segment ended with fewer parts than p waits for).
func (m *hlsMedia) normalize(p pos) pos {
	if p.Part == 0 || p.MSN < m.MSN0 {
		return p
	}
	if idx := p.MSN - m.MSN0; idx < uint64(len(m.Segs)) && p.Part >= len(m.Segs[idx].Parts) {
		return pos{p.MSN + 1, 0}
	}
	return p
}

// startPos is where a player joins: with parts, the newest independent part
// at least the part hold-back from the live edge; without, startSegs
// segments from the end (HLS clients start three target durations back).
func (m *hlsMedia) startPos(useParts bool, startSegs int) pos {
	if useParts && m.PartTarget > 0 {
		hold := m.PartHoldBack
		if hold <= 0 {
			hold = 3 * m.PartTarget
		}
		type at struct {
			p   pos
			d   time.Duration
			ind bool
		}
		var all []at
		for i, s := range m.Segs {
			for j, pt := range s.Parts {
				all = append(all, at{pos{m.MSN0 + uint64(i), j}, pt.Dur, pt.Independent || j == 0})
			}
		}
		for j, pt := range m.Tail {
			all = append(all, at{pos{m.MSN0 + uint64(len(m.Segs)), j}, pt.Dur, pt.Independent || j == 0})
		}
		var behind time.Duration
		for i := len(all) - 1; i >= 0; i-- {
			behind += all[i].d
			if behind >= hold && all[i].ind {
				return all[i].p
			}
		}
		if len(all) > 0 {
			return all[0].p
		}
	}
	n := len(m.Segs)
	if useParts && m.CanBlock {
		startSegs = 1 // a low-latency player on a rendition without parts
	}
	return pos{m.MSN0 + uint64(max(0, n-startSegs)), 0}
}

// behind is the media time listed from p to the end of the playlist.
func (m *hlsMedia) behind(p pos, useParts bool) time.Duration {
	var d time.Duration
	for i, s := range m.Segs {
		msn := m.MSN0 + uint64(i)
		switch {
		case msn < p.MSN:
		case msn == p.MSN && useParts && len(s.Parts) > 0:
			for _, pt := range s.Parts[min(p.Part, len(s.Parts)):] {
				d += pt.Dur
			}
		default:
			d += s.Dur
		}
	}
	if useParts {
		tail := m.Tail
		if p.MSN == m.MSN0+uint64(len(m.Segs)) {
			tail = tail[min(p.Part, len(tail)):]
		}
		for _, pt := range tail {
			d += pt.Dur
		}
	}
	return d
}

// blockingURL is u with the delivery directives asking for p.
func blockingURL(u string, p pos, withPart bool) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	s := u + sep + "_HLS_msn=" + fmt.Sprint(p.MSN)
	if withPart {
		s += "&_HLS_part=" + fmt.Sprint(p.Part)
	}
	return s
}

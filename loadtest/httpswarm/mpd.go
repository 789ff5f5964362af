package httpswarm

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Eyevinn/dash-mpd/mpd"
)

// dashModel is a parsed MPD: the video and audio Representations with the
// segments each lists.
type dashModel struct {
	Dynamic      bool
	UpdatePeriod time.Duration // minimumUpdatePeriod (0: not given)
	Delay        time.Duration // suggestedPresentationDelay (0: not given)
	Video, Audio []dashRep     // ascending bandwidth
	First        string        // the first video Representation in document order (the default)
}

type dashRep struct {
	variant
	Segs []dashSeg // in presentation order, over every Period
}

// dashSeg is one segment of a Representation.
type dashSeg struct {
	Start float64 // presentation time, seconds (Period@start included)
	Dur   float64 // seconds
	URL   string
	Init  string // the initialization segment of its Period
}

// parseMPD reads an MPD fetched from base; now places segments of a
// template without a timeline.
func parseMPD(base *url.URL, body []byte, now time.Time) (*dashModel, error) {
	if len(body) > maxPlaylistBytes {
		return nil, fmt.Errorf("%w: manifest of %d bytes", errParse, len(body))
	}
	m, err := mpd.MPDFromBytes(body)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", errParse, err)
	}
	if len(m.Periods) > 100 {
		return nil, fmt.Errorf("%w: %d periods", errParse, len(m.Periods))
	}
	dm := &dashModel{Dynamic: m.GetType() == "dynamic"}
	if m.MinimumUpdatePeriod != nil {
		dm.UpdatePeriod = time.Duration(*m.MinimumUpdatePeriod)
	}
	if m.SuggestedPresentationDelay != nil {
		dm.Delay = time.Duration(*m.SuggestedPresentationDelay)
	}
	var ast time.Time
	if m.AvailabilityStartTime != "" {
		ast, _ = time.Parse(time.RFC3339Nano, string(m.AvailabilityStartTime))
	}
	mbase, err := baseOf(base, m.BaseURL)
	if err != nil {
		return nil, err
	}
	video := map[string]*dashRep{}
	audio := map[string]*dashRep{}
	var vOrder, aOrder []string
	segs := 0
	for _, p := range m.Periods {
		pbase, err := baseOf(mbase, p.BaseURLs)
		if err != nil {
			return nil, err
		}
		var pstart float64
		if p.Start != nil {
			pstart = time.Duration(*p.Start).Seconds()
		}
		if len(p.AdaptationSets) > 100 {
			return nil, fmt.Errorf("%w: %d adaptation sets", errParse, len(p.AdaptationSets))
		}
		for _, as := range p.AdaptationSets {
			kind := kindOf(as)
			if kind == "" {
				continue
			}
			abase, err := baseOf(pbase, as.BaseURLs)
			if err != nil {
				return nil, err
			}
			if len(as.Representations) > 100 {
				return nil, fmt.Errorf("%w: %d representations", errParse, len(as.Representations))
			}
			for _, r := range as.Representations {
				rbase, err := baseOf(abase, r.BaseURLs)
				if err != nil {
					return nil, err
				}
				st := r.SegmentTemplate
				if st == nil {
					st = as.SegmentTemplate
				}
				if st == nil {
					st = p.SegmentTemplate
				}
				if st == nil {
					return nil, fmt.Errorf("%w: representation %q has no SegmentTemplate (only templates are played)", errParse, r.Id)
				}
				list, init, err := templateSegments(rbase, st, r, pstart, ast, now, maxEntries-segs)
				if err != nil {
					return nil, err
				}
				segs += len(list)
				reps, order := video, &vOrder
				if kind == "audio" {
					reps, order = audio, &aOrder
				}
				dr := reps[r.Id]
				if dr == nil {
					dr = &dashRep{variant: variant{Name: r.Id, Bandwidth: int(r.Bandwidth)}}
					reps[r.Id] = dr
					*order = append(*order, r.Id)
				}
				for i := range list {
					list[i].Init = init
				}
				dr.Segs = append(dr.Segs, list...)
			}
		}
	}
	collect := func(reps map[string]*dashRep, order []string) []dashRep {
		var out []dashRep
		for _, id := range order {
			r := reps[id]
			sort.SliceStable(r.Segs, func(i, j int) bool { return r.Segs[i].Start < r.Segs[j].Start })
			out = append(out, *r)
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Bandwidth < out[j].Bandwidth })
		return out
	}
	dm.Video, dm.Audio = collect(video, vOrder), collect(audio, aOrder)
	if len(dm.Video) == 0 {
		// An audio-only presentation is played as such.
		dm.Video, dm.Audio, vOrder = dm.Audio, nil, aOrder
	}
	if len(vOrder) > 0 {
		dm.First = vOrder[0]
	}
	if len(dm.Video) == 0 {
		return nil, fmt.Errorf("%w: no video or audio representations", errParse)
	}
	return dm, nil
}

func kindOf(as *mpd.AdaptationSetType) string {
	ct := string(as.ContentType)
	mt := as.MimeType
	if mt == "" && len(as.Representations) > 0 {
		mt = as.Representations[0].MimeType
	}
	switch {
	case ct == "video" || strings.HasPrefix(mt, "video/"):
		return "video"
	case ct == "audio" || strings.HasPrefix(mt, "audio/"):
		return "audio"
	}
	return ""
}

func baseOf(base *url.URL, bs []*mpd.BaseURLType) (*url.URL, error) {
	if len(bs) == 0 || strings.TrimSpace(string(bs[0].Value)) == "" {
		return base, nil
	}
	s, err := resolve(base, strings.TrimSpace(string(bs[0].Value)))
	if err != nil {
		return nil, err
	}
	return url.Parse(s)
}

// templateSegments lists the segments of one Representation's template:
// from its SegmentTimeline, or, without one, the segments of @duration that
// the clock says are available (the newest 30 at most).
func templateSegments(base *url.URL, st *mpd.SegmentTemplateType, r *mpd.RepresentationType, pstart float64, ast, now time.Time, limit int) ([]dashSeg, string, error) {
	ts := float64(st.GetTimescale())
	if ts <= 0 {
		return nil, "", fmt.Errorf("%w: timescale 0", errParse)
	}
	var pto uint64
	if st.PresentationTimeOffset != nil {
		pto = *st.PresentationTimeOffset
	}
	number := uint64(1)
	if st.StartNumber != nil {
		number = uint64(*st.StartNumber)
	}
	var init string
	if st.Initialization != "" {
		s, err := expand(st.Initialization, r.Id, r.Bandwidth, 0, 0)
		if err != nil {
			return nil, "", err
		}
		if init, err = resolve(base, s); err != nil {
			return nil, "", err
		}
	}
	if st.Media == "" {
		return nil, "", fmt.Errorf("%w: SegmentTemplate without media", errParse)
	}
	var out []dashSeg
	add := func(t, d, n uint64) error {
		if len(out) >= limit {
			return fmt.Errorf("%w: more than %d segments", errParse, maxEntries)
		}
		s, err := expand(st.Media, r.Id, r.Bandwidth, n, t)
		if err != nil {
			return err
		}
		u, err := resolve(base, s)
		if err != nil {
			return err
		}
		out = append(out, dashSeg{Start: pstart + (float64(t)-float64(pto))/ts, Dur: float64(d) / ts, URL: u})
		return nil
	}
	if tl := st.SegmentTimeline; tl != nil {
		var t uint64
		for i, s := range tl.S {
			if s.T != nil {
				t = *s.T
			}
			if s.D == 0 {
				return nil, "", fmt.Errorf("%w: S without d", errParse)
			}
			rep := s.R
			if rep < 0 {
				// Repeat up to the next S, or up to now.
				end := uint64(0)
				switch {
				case i+1 < len(tl.S) && tl.S[i+1].T != nil:
					end = *tl.S[i+1].T
				case !ast.IsZero():
					el := now.Sub(ast).Seconds() - pstart
					if el > 0 {
						end = uint64(el*ts) + pto
					}
				}
				rep = -1
				if end > t {
					rep = int(min((end-t)/s.D, uint64(limit))) - 1
				}
			}
			if rep > limit {
				return nil, "", fmt.Errorf("%w: S@r %d", errParse, s.R)
			}
			for k := 0; k <= rep; k++ {
				if err := add(t, s.D, number); err != nil {
					return nil, "", err
				}
				t += s.D
				number++
			}
		}
		return out, init, nil
	}
	if st.Duration == nil || *st.Duration == 0 || ast.IsZero() {
		return nil, "", fmt.Errorf("%w: SegmentTemplate with neither SegmentTimeline nor duration and availabilityStartTime", errParse)
	}
	d := uint64(*st.Duration)
	el := now.Sub(ast).Seconds() - pstart
	if el <= 0 {
		return nil, init, nil
	}
	done := uint64(el * ts / float64(d)) // complete segments so far
	first := uint64(0)
	if done > 30 {
		first = done - 30
	}
	for k := first; k < done; k++ {
		if err := add(pto+k*d, d, number+k); err != nil {
			return nil, "", err
		}
	}
	return out, init, nil
}

// expand fills a DASH template's identifiers ($RepresentationID$,
// $Bandwidth$, $Number$, $Time$, each with an optional %0Nd width, and $$).
func expand(tmpl, id string, bw uint32, number, t uint64) (string, error) {
	if len(tmpl) > 1024 {
		return "", fmt.Errorf("%w: template of %d bytes", errParse, len(tmpl))
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '$')
		if i < 0 {
			b.WriteString(tmpl)
			return b.String(), nil
		}
		b.WriteString(tmpl[:i])
		rest := tmpl[i+1:]
		j := strings.IndexByte(rest, '$')
		if j < 0 {
			return "", fmt.Errorf("%w: template %q: unclosed $", errParse, tmpl)
		}
		name, format := rest[:j], ""
		if k := strings.IndexByte(name, '%'); k >= 0 {
			name, format = name[:k], name[k:]
		}
		var v uint64
		switch name {
		case "":
			b.WriteByte('$')
			tmpl = rest[j+1:]
			continue
		case "RepresentationID":
			if format != "" {
				return "", fmt.Errorf("%w: template %q: format on RepresentationID", errParse, tmpl)
			}
			b.WriteString(id)
			tmpl = rest[j+1:]
			continue
		case "Bandwidth":
			v = uint64(bw)
		case "Number":
			v = number
		case "Time":
			v = t
		default:
			return "", fmt.Errorf("%w: template %q: unknown identifier %q", errParse, tmpl, name)
		}
		s := strconv.FormatUint(v, 10)
		if format != "" {
			w, ok := strings.CutPrefix(format, "%0")
			w, ok2 := strings.CutSuffix(w, "d")
			n, err := strconv.Atoi(w)
			if !ok || !ok2 || err != nil || n < 1 || n > 20 {
				return "", fmt.Errorf("%w: template %q: format %q", errParse, tmpl, format)
			}
			for len(s) < n {
				s = "0" + s
			}
		}
		b.WriteString(s)
		tmpl = rest[j+1:]
	}
}

package httpswarm

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
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
	AST          time.Time     // availabilityStartTime (zero: not given)
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

// The MPD elements a player needs, decoded with the standard library.
type xmlMPD struct {
	XMLName                    xml.Name    `xml:"MPD"`
	Type                       string      `xml:"type,attr"`
	AvailabilityStartTime      string      `xml:"availabilityStartTime,attr"`
	MinimumUpdatePeriod        string      `xml:"minimumUpdatePeriod,attr"`
	SuggestedPresentationDelay string      `xml:"suggestedPresentationDelay,attr"`
	BaseURLs                   []string    `xml:"BaseURL"`
	Periods                    []xmlPeriod `xml:"Period"`
}

type xmlPeriod struct {
	ID              string     `xml:"id,attr"`
	Start           string     `xml:"start,attr"`
	BaseURLs        []string   `xml:"BaseURL"`
	SegmentTemplate *xmlTmpl   `xml:"SegmentTemplate"`
	AdaptationSets  []xmlAdapt `xml:"AdaptationSet"`
}

type xmlAdapt struct {
	ContentType     string    `xml:"contentType,attr"`
	MimeType        string    `xml:"mimeType,attr"`
	BaseURLs        []string  `xml:"BaseURL"`
	SegmentTemplate *xmlTmpl  `xml:"SegmentTemplate"`
	Representations []xmlRepr `xml:"Representation"`
}

type xmlRepr struct {
	ID              string   `xml:"id,attr"`
	Bandwidth       uint32   `xml:"bandwidth,attr"`
	MimeType        string   `xml:"mimeType,attr"`
	BaseURLs        []string `xml:"BaseURL"`
	SegmentTemplate *xmlTmpl `xml:"SegmentTemplate"`
}

type xmlTmpl struct {
	Media                  string       `xml:"media,attr"`
	Initialization         string       `xml:"initialization,attr"`
	Timescale              *uint64      `xml:"timescale,attr"`
	PresentationTimeOffset uint64       `xml:"presentationTimeOffset,attr"`
	StartNumber            *uint64      `xml:"startNumber,attr"`
	Duration               uint64       `xml:"duration,attr"`
	Timeline               *xmlTimeline `xml:"SegmentTimeline"`
}

type xmlTimeline struct {
	S []xmlS `xml:"S"`
}

type xmlS struct {
	T *uint64 `xml:"t,attr"`
	D uint64  `xml:"d,attr"`
	R int64   `xml:"r,attr"`
}

func isoDuration(s, what string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := mpd.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: manifest: %s %q", errParse, what, s)
	}
	return d, nil
}

// parseMPD reads an MPD fetched from base; now places segments of a
// template without a timeline.
func parseMPD(base *url.URL, body []byte, now time.Time) (*dashModel, error) {
	if len(body) > maxPlaylistBytes {
		return nil, fmt.Errorf("%w: manifest of %d bytes", errParse, len(body))
	}
	if err := wellFormed(body); err != nil {
		return nil, err
	}
	var m xmlMPD
	if err := xml.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", errParse, err)
	}
	if len(m.Periods) > 100 {
		return nil, fmt.Errorf("%w: %d periods", errParse, len(m.Periods))
	}
	dm := &dashModel{Dynamic: m.Type == "dynamic"}
	var err error
	if dm.UpdatePeriod, err = isoDuration(m.MinimumUpdatePeriod, "minimumUpdatePeriod"); err != nil {
		return nil, err
	}
	if dm.Delay, err = isoDuration(m.SuggestedPresentationDelay, "suggestedPresentationDelay"); err != nil {
		return nil, err
	}
	var ast time.Time
	if m.AvailabilityStartTime != "" {
		ast, _ = time.Parse(time.RFC3339Nano, m.AvailabilityStartTime)
	}
	dm.AST = ast
	mbase, err := baseOf(base, m.BaseURLs)
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
		ps, err := isoDuration(p.Start, "Period@start")
		if err != nil {
			return nil, err
		}
		pstart := ps.Seconds()
		if len(p.AdaptationSets) > 100 {
			return nil, fmt.Errorf("%w: %d adaptation sets", errParse, len(p.AdaptationSets))
		}
		for _, as := range p.AdaptationSets {
			kind := kindOf(&as)
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
					return nil, fmt.Errorf("%w: representation %q has no SegmentTemplate (only templates are played)", errParse, r.ID)
				}
				list, init, err := templateSegments(rbase, st, r.ID, r.Bandwidth, pstart, ast, now, maxEntries-segs)
				if err != nil {
					return nil, err
				}
				segs += len(list)
				reps, order := video, &vOrder
				if kind == "audio" {
					reps, order = audio, &aOrder
				}
				dr := reps[r.ID]
				if dr == nil {
					dr = &dashRep{variant: variant{Name: r.ID, Bandwidth: int(r.Bandwidth)}}
					reps[r.ID] = dr
					*order = append(*order, r.ID)
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

// wellFormed checks, within bounds, that body is one well-formed XML
// document whose root is an MPD.
func wellFormed(body []byte) error {
	d := xml.NewDecoder(bytes.NewReader(body))
	depth, tokens, root := 0, 0, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			if !root || depth != 0 {
				return fmt.Errorf("%w: manifest: not one complete MPD element", errParse)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: manifest: %v", errParse, err)
		}
		if tokens++; tokens > 20*maxEntries {
			return fmt.Errorf("%w: manifest of more than %d XML tokens", errParse, 20*maxEntries)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if root || t.Name.Local != "MPD" {
					return fmt.Errorf("%w: manifest: root element %q", errParse, t.Name.Local)
				}
				root = true
			}
			if depth++; depth > 32 {
				return fmt.Errorf("%w: manifest nested deeper than 32", errParse)
			}
		case xml.EndElement:
			depth--
		}
	}
}

func kindOf(as *xmlAdapt) string {
	mt := as.MimeType
	if mt == "" && len(as.Representations) > 0 {
		mt = as.Representations[0].MimeType
	}
	switch {
	case as.ContentType == "video" || strings.HasPrefix(mt, "video/"):
		return "video"
	case as.ContentType == "audio" || strings.HasPrefix(mt, "audio/"):
		return "audio"
	}
	return ""
}

func baseOf(base *url.URL, bs []string) (*url.URL, error) {
	if len(bs) == 0 || strings.TrimSpace(bs[0]) == "" {
		return base, nil
	}
	s, err := resolve(base, strings.TrimSpace(bs[0]))
	if err != nil {
		return nil, err
	}
	return url.Parse(s)
}

// templateSegments lists the segments of one Representation's template:
// from its SegmentTimeline, or, without one, the segments of @duration that
// the clock says are available (the newest 30 at most).
func templateSegments(base *url.URL, st *xmlTmpl, id string, bw uint32, pstart float64, ast, now time.Time, limit int) ([]dashSeg, string, error) {
	ts := 1.0
	if st.Timescale != nil {
		ts = float64(*st.Timescale)
	}
	if ts <= 0 {
		return nil, "", fmt.Errorf("%w: timescale 0", errParse)
	}
	pto := st.PresentationTimeOffset
	number := uint64(1)
	if st.StartNumber != nil {
		number = *st.StartNumber
	}
	var init string
	if st.Initialization != "" {
		s, err := expand(st.Initialization, id, bw, 0, 0)
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
		s, err := expand(st.Media, id, bw, n, t)
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
	if tl := st.Timeline; tl != nil {
		var t uint64
		for i, s := range tl.S {
			if s.T != nil {
				t = *s.T
			}
			if s.D == 0 {
				return nil, "", fmt.Errorf("%w: S without d", errParse)
			}
			if s.R > int64(limit) {
				return nil, "", fmt.Errorf("%w: S@r %d", errParse, s.R)
			}
			rep := int(s.R)
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
	if st.Duration == 0 || ast.IsZero() {
		return nil, "", fmt.Errorf("%w: SegmentTemplate with neither SegmentTimeline nor duration and availabilityStartTime", errParse)
	}
	d := st.Duration
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

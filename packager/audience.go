package packager

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Protocol indexes of an audience.
const (
	protoHLS = iota
	protoDASH
	numProtos
)

// protoIndex maps the URL prefix of a request to its audience index.
func protoIndex(proto string) int {
	if proto == "dash" {
		return protoDASH
	}
	return protoHLS
}

// ProtocolAudience is the audience of one stream over one protocol.
type ProtocolAudience struct {
	Viewers int     `json:"viewers"` // clients seen within the audience window
	Mbps    float64 `json:"mbps"`    // response bytes sent to them, over the last rateWindow (10 s)
}

// Audience is the HTTP audience of one stream: what a relay reports to the
// control plane beside its RTMP viewers.
type Audience struct {
	App  string           `json:"app"`
	Name string           `json:"name"`
	HLS  ProtocolAudience `json:"hls"`
	DASH ProtocolAudience `json:"dash"`
	// Ready: the stream has a complete segment and has not ended, so a
	// player sent here plays at once (a stream whose packaging has just
	// started answers its first segments' requests with 404).
	Ready bool `json:"ready"`
}

// audience counts a stream's HTTP clients by protocol (a client is a
// session or token query parameter, else an address: viewerKey) within a
// short window, and the bytes sent to them.
type audience struct {
	sets  [numProtos]*viewerSet
	bytes [numProtos]atomic.Int64

	mu      sync.Mutex
	samples [rateSamples]rateSample // ring of byte counts, newest at head
	head, n int
	mbits   [numProtos]float64
}

// The rate is measured over rateWindow: players fetch a segment when it
// appears, all at about the same time, so over one second the bytes come
// in bursts a segment apart (a 1 s window read 0 one second in two with
// 2 s segments). Reads take a sample at most once a second.
const (
	rateWindow  = 10 * time.Second
	rateSamples = 16
)

type rateSample struct {
	at    time.Time
	bytes [numProtos]int64
}

func newAudience(window time.Duration, max int) *audience {
	a := &audience{}
	for i := range a.sets {
		a.sets[i] = newViewerSet(window, max)
	}
	return a
}

// touch records a request of client key over proto.
func (a *audience) touch(proto int, key string, now time.Time) { a.sets[proto].touch(key, now) }

// served adds the body bytes of one response.
func (a *audience) served(proto int, n int64) {
	if n > 0 {
		a.bytes[proto].Add(n)
	}
}

// read returns the viewers and the Mbit/s of each protocol. The rate is
// measured from samples that reads take at least a second apart, over the
// last rateWindow (or since the first sample), so several readers (the
// status report, the API, metrics) share one measure.
func (a *audience) read(now time.Time) (out [numProtos]ProtocolAudience) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 || now.Sub(a.samples[a.head].at) >= time.Second {
		a.head = (a.head + 1) % rateSamples
		s := &a.samples[a.head]
		s.at = now
		for i := range s.bytes {
			s.bytes[i] = a.bytes[i].Load()
		}
		a.n = min(a.n+1, rateSamples)
		// The oldest sample within the window.
		newest, from := s, s
		for k := 1; k < a.n; k++ {
			o := &a.samples[(a.head-k+rateSamples)%rateSamples]
			if now.Sub(o.at) > rateWindow {
				break
			}
			from = o
		}
		if dt := newest.at.Sub(from.at).Seconds(); dt > 0 {
			for i := range a.mbits {
				a.mbits[i] = float64(newest.bytes[i]-from.bytes[i]) * 8 / 1e6 / dt
			}
		}
	}
	for i := range out {
		out[i] = ProtocolAudience{Viewers: a.sets[i].count(now), Mbps: a.mbits[i]}
	}
	return out
}

// count returns the clients seen within the window.
func (v *viewerSet) count(now time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, t := range v.seen {
		if now.Sub(t) <= v.window {
			n++
		}
	}
	return n
}

// Audience returns the HTTP audience of every stream being packaged, in
// app/name order.
func (p *Packager) Audience() []Audience { return p.audienceAt(p.now()) }

func (p *Packager) audienceAt(now time.Time) []Audience {
	p.mu.Lock()
	streams := make([]*stream, 0, len(p.streams))
	for _, st := range p.streams {
		streams = append(streams, st)
	}
	p.mu.Unlock()
	out := make([]Audience, 0, len(streams))
	for _, st := range streams {
		r := st.audience.read(now)
		out = append(out, Audience{App: st.app, Name: st.name, HLS: r[protoHLS], DASH: r[protoDASH], Ready: st.serving()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].App != out[j].App {
			return out[i].App < out[j].App
		}
		return out[i].Name < out[j].Name
	})
	return out
}

package peer

import (
	"math"
	"sort"
	"sync"
	"time"
)

// hopLatency measures what a server adds per hop: a reference player reads
// the stream straight from the primary while the swarm reads it through the
// server under test, and each frame (by message type and timestamp) a
// sampled swarm player reads is compared with the time the reference read
// it. Both players run in this process, so they share one clock.
type hopLatency struct {
	mu  sync.Mutex
	ref map[frameKey]time.Time

	step    int             // every step-th swarm player is sampled
	samples [][]frameSample // by player id; each written by its player only
	joined  []time.Time     // first frame of each sampled player
}

type frameKey struct {
	typ uint8
	ts  uint32
}

type frameSample struct {
	key frameKey
	at  time.Time
}

// latencySampled is about how many swarm players are sampled.
const latencySampled = 50

func newHopLatency(viewers int) *hopLatency {
	step := max(1, viewers/latencySampled)
	return &hopLatency{
		ref:     make(map[frameKey]time.Time, 4096),
		step:    step,
		samples: make([][]frameSample, viewers),
		joined:  make([]time.Time, viewers),
	}
}

// reference records a frame read by the reference player.
func (h *hopLatency) reference(_ int, typ uint8, ts uint32, at time.Time) {
	h.mu.Lock()
	k := frameKey{typ, ts}
	if _, ok := h.ref[k]; !ok {
		h.ref[k] = at
	}
	h.mu.Unlock()
}

// swarm records a frame read by a swarm player.
func (h *hopLatency) swarm(id int, typ uint8, ts uint32, at time.Time) {
	if id%h.step != 0 || id >= len(h.samples) {
		return
	}
	if h.joined[id].IsZero() {
		h.joined[id] = at
	}
	h.samples[id] = append(h.samples[id], frameSample{frameKey{typ, ts}, at})
}

// LatencyStats summarises the added latency of a hop, in milliseconds.
type LatencyStats struct {
	Frames int     `json:"frames"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
}

// stats compares the samples with the reference. Frames a player received
// within its first second (its join burst: the GOP cache, behind the live
// edge by design) are not counted.
func (h *hopLatency) stats() LatencyStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	var d []float64
	for id, ss := range h.samples {
		for _, s := range ss {
			r, ok := h.ref[s.key]
			if !ok || !r.After(h.joined[id].Add(time.Second)) {
				continue
			}
			d = append(d, float64(s.at.Sub(r).Microseconds())/1000)
		}
	}
	if len(d) == 0 {
		return LatencyStats{}
	}
	sort.Float64s(d)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(d)))) - 1
		return d[max(0, min(i, len(d)-1))]
	}
	return LatencyStats{Frames: len(d), P50: at(0.50), P99: at(0.99), Max: d[len(d)-1]}
}

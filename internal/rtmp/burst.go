package rtmp

import (
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// A viewer's Gap (Flusher) batches media that trickles in, a frame at a
// time from an encoder, into fewer writevs. Media that arrives in bursts —
// a relay's stream, which its upstream writes in whole rounds — is batched
// already: one writev after each burst carries it, and a Gap only delays
// it. Worse, a burst that reaches the hub in two parts (the pull's reader
// preempted mid-burst on a busy machine, TCP segments spread in time)
// would leave its second part waiting a whole Gap, and the connections
// served in that round would then keep that phase, late for every later
// burst. So a service whose media arrived together is not followed by a
// Gap: the rest of its burst, and the next burst, go out as they come
// (after the round's Coalesce). The write rate stays the upstream's.

// burstMeter records the media a service wrote: how much media time it
// covers and over how long it arrived in the hub.
type burstMeter struct {
	n                 int  // media frames written
	stamped           bool // every one with its arrival in the hub
	firstTS, lastTS   uint32
	firstArr, lastArr int64 // av.Monotonic
}

// minBurstSpan is the least media a service must carry to count as a
// burst: a few frames that happened to arrive together (an encoder's audio
// beside its video) are not one.
const minBurstSpan = 20 * time.Millisecond

func (m *burstMeter) reset() { m.n = 0 }

// add counts a media frame written (frames come in their arrival order).
func (m *burstMeter) add(f *av.Frame) {
	if m.n == 0 {
		m.firstTS, m.firstArr, m.stamped = f.Timestamp, f.Arrived, true
	}
	if f.Arrived == 0 {
		m.stamped = false // not from a hub: no arrival known
	}
	m.lastTS, m.lastArr = f.Timestamp, f.Arrived
	m.n++
}

// together reports whether the media written arrived in a burst: at least
// minBurstSpan of it, over at most a quarter of that time.
func (m *burstMeter) together() bool {
	if m.n < 2 || !m.stamped {
		return false
	}
	span := time.Duration(int32(m.lastTS-m.firstTS)) * time.Millisecond
	if span < minBurstSpan {
		return false
	}
	return time.Duration(m.lastArr-m.firstArr)*4 <= span
}

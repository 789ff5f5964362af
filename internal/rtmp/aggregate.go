package rtmp

import (
	"encoding/binary"
)

// SplitAggregate calls fn for each sub-message of an aggregate message
// (type 22): FLV tags whose timestamps are rebased on the aggregate's own.
// Their payloads are sub-slices of m's, capacity-limited to their own bytes.
func SplitAggregate(m Message, fn func(Message)) error {
	p := m.Payload
	var base uint32
	first := true
	for len(p) > 0 {
		if len(p) < 11 {
			return protocolErr("truncated aggregate tag header")
		}
		typ := p[0]
		size := int(be24(p[1:]))
		ts := be24(p[4:]) | uint32(p[7])<<24
		if len(p) < 11+size+4 {
			return protocolErr("aggregate tag of %d bytes truncated", size)
		}
		if first {
			base, first = ts, false
		}
		if typ == TypeAudio || typ == TypeVideo || typ == TypeDataAMF0 {
			// The parts share the aggregate's buffer (which, like every
			// payload the chunk reader hands over, is the callee's and never
			// written again): no copy.
			body := p[11 : 11+size : 11+size]
			fn(Message{Type: typ, StreamID: m.StreamID, Timestamp: m.Timestamp + (ts - base), Payload: body})
		}
		if back := binary.BigEndian.Uint32(p[11+size:]); back != uint32(11+size) {
			return protocolErr("aggregate back pointer %d, want %d", back, 11+size)
		}
		p = p[11+size+4:]
	}
	return nil
}

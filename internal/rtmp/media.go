package rtmp

import "github.com/relaymesh/relaymesh/internal/av"

// The one place where RTMP messages become media frames (with av.KindOf
// mapping types to kinds): a publisher's messages on the primary and an
// upstream's on a relay's pull both go through EachFrame.

// FrameWriter takes media frames (a Publisher, a hub).
type FrameWriter interface {
	Write(kind av.Kind, ts uint32, payload []byte) // payload belongs to the callee
}

// EachFrame writes to w each media frame m carries and reports whether m
// is a media message at all: one frame for audio, video or data (AMF3 data
// without its format byte; @setDataFrame unwrapped to the data itself), one
// per sub-message of an aggregate, with its timestamp rebased. A malformed
// aggregate yields the frames before the fault, then its error. Payloads
// are m's (or, for an aggregate, parts of it): w may keep them.
func EachFrame(m Message, w FrameWriter) (bool, error) {
	if m.Type == TypeAggregate {
		return true, SplitAggregate(m, func(sub Message) { eachFrame(sub, w) })
	}
	return eachFrame(m, w), nil
}

func eachFrame(m Message, w FrameWriter) bool {
	kind, ok := av.KindOf(m.Type)
	if !ok {
		return false
	}
	p := m.Payload
	if kind == av.KindData {
		if m.Type == TypeDataAMF3 {
			if len(p) < 2 {
				return true // nothing after the format byte
			}
			p = p[1:]
		}
		p = av.StripSetDataFrame(p)
	}
	w.Write(kind, m.Timestamp, p)
	return true
}

// noMedia is the FrameWriter of media nobody takes.
type noMedia struct{}

func (noMedia) Write(av.Kind, uint32, []byte) {}

// Package av is the media model shared by the data plane: a Frame is one
// RTMP audio, video or data message, classified once on ingest and then
// shared, immutable, by every subscriber of a stream.
package av

import "fmt"

// Kind says what a frame carries.
type Kind uint8

const (
	KindAudio Kind = iota + 1 // RTMP message type 8 (an FLV audio tag body)
	KindVideo                 // RTMP message type 9 (an FLV video tag body)
	KindData                  // RTMP message type 18: onMetaData, onTextData, onCuePoint, …
	KindEvent                 // not media: a stream event for subscribers (see Event)
)

func (k Kind) String() string {
	switch k {
	case KindAudio:
		return "audio"
	case KindVideo:
		return "video"
	case KindData:
		return "data"
	case KindEvent:
		return "event"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is a stream-level event delivered in order with the frames.
type Event uint8

const (
	EventNone      Event = iota
	EventPublish         // the broadcaster started (or came back)
	EventUnpublish       // the broadcaster stopped; more frames may follow after EventPublish
)

// Frame is one message of a live stream. Once built by New or NewEvent it is
// never modified (but for Arrived, which the hub sets before any subscriber
// sees it): the same *Frame is queued for every subscriber.
type Frame struct {
	Kind      Kind
	Timestamp uint32 // RTMP timestamp in milliseconds (decode time for video)
	Payload   []byte // the message body exactly as RTMP carries it; owned by the frame

	// Classification, filled by New.
	Codec      uint8 // video: FLV CodecID (7 = AVC); audio: FLV SoundFormat (10 = AAC)
	SeqHeader  bool  // AVC decoder configuration record or AAC AudioSpecificConfig
	Keyframe   bool  // video: a random access point (FLV frame type 1)
	Disposable bool  // video: nothing references it (FLV frame type 3, or every H.264 slice has nal_ref_idc 0)
	CTS        int32 // video (AVC): composition time offset in ms, may be negative
	Metadata   bool  // data: onMetaData (or @setDataFrame onMetaData)

	Event Event // KindEvent only

	// Arrived is when the hub took the frame (Monotonic, ns; 0: never
	// fanned out): set once, before any subscriber sees the frame.
	Arrived int64
}

// FLV video codec ids and audio sound formats that the data plane understands.
const (
	CodecAVC  = 7
	CodecHEVC = 12 // "enhanced" FLV predecessor id used by some encoders
	CodecAAC  = 10
	CodecMP3  = 2
)

// New copies payload and classifies it. nalLenSize is the H.264 NAL unit
// length size from the stream's AVC sequence header (1, 2 or 4; 0 when unknown,
// in which case 4 is assumed).
func New(kind Kind, ts uint32, payload []byte, nalLenSize int) *Frame {
	p := make([]byte, len(payload))
	copy(p, payload)
	return Wrap(kind, ts, p, nalLenSize)
}

// Wrap is New without the copy: payload must not be modified afterwards.
func Wrap(kind Kind, ts uint32, payload []byte, nalLenSize int) *Frame {
	f := &Frame{Kind: kind, Timestamp: ts, Payload: payload}
	switch kind {
	case KindVideo:
		classifyVideo(f, nalLenSize)
	case KindAudio:
		classifyAudio(f)
	case KindData:
		f.Metadata = isMetadata(payload)
	}
	return f
}

// NewEvent returns an event frame.
func NewEvent(e Event, ts uint32) *Frame {
	return &Frame{Kind: KindEvent, Event: e, Timestamp: ts}
}

// Droppable reports whether a slow viewer may lose this frame at all.
// Sequence headers, data messages and events are never dropped.
func (f *Frame) Droppable() bool {
	switch f.Kind {
	case KindVideo, KindAudio:
		return !f.SeqHeader
	}
	return false
}

// PTS is the presentation time in milliseconds (Timestamp + CTS).
func (f *Frame) PTS() int64 { return int64(f.Timestamp) + int64(f.CTS) }

func (f *Frame) String() string {
	flags := ""
	if f.SeqHeader {
		flags += " seq"
	}
	if f.Keyframe {
		flags += " key"
	}
	if f.Disposable {
		flags += " disp"
	}
	if f.Metadata {
		flags += " meta"
	}
	return fmt.Sprintf("%s ts=%d len=%d%s", f.Kind, f.Timestamp, len(f.Payload), flags)
}

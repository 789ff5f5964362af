// Package rtmp is relaymesh's RTMP connection layer: the chunk stream (a
// bounded, fuzzed reader and a writev-batching writer), protocol control,
// and the command state machines of servers and clients. The client side of
// the handshake comes from go-rtmp and AMF0 values from go-amf0; this
// package owns what those do not offer: the server handshake (simple and
// digest), client play, shared-object and RPC messages, and encode-once
// fan-out of shared frame buffers.
package rtmp

import (
	"fmt"

	"github.com/relaymesh/relaymesh/internal/av"
)

// Message types (RTMP 1.0 specification, sections 5.4 and 7.1).
const (
	TypeSetChunkSize     = 1
	TypeAbort            = 2
	TypeAck              = 3
	TypeUserControl      = 4
	TypeWindowAckSize    = 5
	TypeSetPeerBandwidth = 6
	TypeAudio            = av.TypeAudio
	TypeVideo            = av.TypeVideo
	TypeDataAMF3         = av.TypeDataAMF3
	TypeSharedObjectAMF3 = 16
	TypeCommandAMF3      = 17
	TypeDataAMF0         = av.TypeDataAMF0
	TypeSharedObjectAMF0 = 19
	TypeCommandAMF0      = 20
	TypeAggregate        = 22
)

// User control event types (section 7.1.7).
const (
	EventStreamBegin      = 0
	EventStreamEOF        = 1
	EventStreamDry        = 2
	EventSetBufferLength  = 3
	EventStreamIsRecorded = 4
	EventPingRequest      = 6
	EventPingResponse     = 7
)

// Chunk stream ids this package writes on.
const (
	csidControl = 2
	csidCommand = 3
	csidData    = 5
	csidAudio   = 6
	csidVideo   = 7
)

// Message is one RTMP message. Payload is owned by whoever holds the
// message: the reader allocates a fresh one per message, and writers never
// modify it, so it may be shared by many connections.
type Message struct {
	Type      uint8
	StreamID  uint32
	Timestamp uint32
	Payload   []byte
}

func (m *Message) String() string {
	return fmt.Sprintf("type=%d stream=%d ts=%d len=%d", m.Type, m.StreamID, m.Timestamp, len(m.Payload))
}

// csidFor picks the chunk stream a message is written on.
func csidFor(typ uint8) uint32 {
	switch typ {
	case TypeSetChunkSize, TypeAbort, TypeAck, TypeUserControl, TypeWindowAckSize, TypeSetPeerBandwidth:
		return csidControl
	case TypeAudio:
		return csidAudio
	case TypeVideo:
		return csidVideo
	case TypeDataAMF0, TypeDataAMF3, TypeSharedObjectAMF0, TypeSharedObjectAMF3:
		return csidData
	}
	return csidCommand
}

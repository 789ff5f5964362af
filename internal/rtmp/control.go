package rtmp

import (
	"encoding/binary"
)

// Builders of protocol control and user control messages.

func ackMessage(n uint32) Message {
	p := make([]byte, 4)
	binary.BigEndian.PutUint32(p, n)
	return Message{Type: TypeAck, Payload: p}
}

func windowAckMessage(n uint32) Message {
	p := make([]byte, 4)
	binary.BigEndian.PutUint32(p, n)
	return Message{Type: TypeWindowAckSize, Payload: p}
}

func peerBandwidthMessage(n uint32) Message {
	p := make([]byte, 5)
	binary.BigEndian.PutUint32(p, n)
	p[4] = 2 // dynamic
	return Message{Type: TypeSetPeerBandwidth, Payload: p}
}

func chunkSizeMessage(n uint32) Message {
	p := make([]byte, 4)
	binary.BigEndian.PutUint32(p, n)
	return Message{Type: TypeSetChunkSize, Payload: p}
}

// UserControlMessage builds a user control event with a stream id argument.
func UserControlMessage(event uint16, streamID uint32) Message {
	p := make([]byte, 6)
	binary.BigEndian.PutUint16(p, event)
	binary.BigEndian.PutUint32(p[2:], streamID)
	return Message{Type: TypeUserControl, Payload: p}
}

func setBufferLengthMessage(streamID, ms uint32) Message {
	p := make([]byte, 10)
	binary.BigEndian.PutUint16(p, EventSetBufferLength)
	binary.BigEndian.PutUint32(p[2:], streamID)
	binary.BigEndian.PutUint32(p[6:], ms)
	return Message{Type: TypeUserControl, Payload: p}
}

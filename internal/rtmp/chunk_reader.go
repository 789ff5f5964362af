package rtmp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits a chunk reader enforces against its peer.
const (
	DefaultMaxMessageSize = 8 << 20 // 8 MiB: a keyframe of a high-bitrate 4K stream fits
	maxChunkSize          = 1<<24 - 1
	maxChunkStreams       = 64 // distinct chunk stream ids with state at once
)

// ErrProtocol wraps every violation of the chunk protocol by the peer.
var ErrProtocol = errors.New("rtmp protocol violation")

func protocolErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// chunkStream is the reassembly state of one chunk stream id.
type chunkStream struct {
	timestamp uint32 // absolute timestamp of the current/last message
	delta     uint32 // last timestamp delta (type 3 chunks that start a message reuse it)
	length    uint32
	typ       uint8
	streamID  uint32
	extended  bool   // the last type 0/1/2 header carried an extended timestamp
	buf       []byte // payload received so far of the message in progress
	started   bool   // a header of type 0 was seen (state is valid)
}

// ChunkReader reassembles RTMP messages from chunks. It is not safe for
// concurrent use: one goroutine reads a connection.
type ChunkReader struct {
	r              *bufio.Reader
	chunkSize      uint32
	maxMessageSize uint32
	streams        map[uint32]*chunkStream
	bytesRead      uint64
	hdr            [16]byte
}

// NewChunkReader reads chunks from r with the protocol's initial chunk size
// of 128 bytes. maxMessageSize bounds a message's declared length (0 means
// DefaultMaxMessageSize).
func NewChunkReader(r *bufio.Reader, maxMessageSize uint32) *ChunkReader {
	if maxMessageSize == 0 {
		maxMessageSize = DefaultMaxMessageSize
	}
	return &ChunkReader{r: r, chunkSize: 128, maxMessageSize: maxMessageSize, streams: make(map[uint32]*chunkStream)}
}

// SetChunkSize applies the peer's Set Chunk Size message.
func (c *ChunkReader) SetChunkSize(n uint32) error {
	if n == 0 || n > 0x7fffffff {
		return protocolErr("chunk size %d", n)
	}
	if n > maxChunkSize {
		n = maxChunkSize // no message we accept is larger; cap the read size
	}
	c.chunkSize = n
	return nil
}

// Abort discards the partial message of a chunk stream (Abort Message).
func (c *ChunkReader) Abort(csid uint32) {
	if cs := c.streams[csid]; cs != nil {
		cs.buf = nil
	}
}

// BytesRead is the number of bytes consumed so far (for acknowledgements).
func (c *ChunkReader) BytesRead() uint64 { return c.bytesRead }

func (c *ChunkReader) read(p []byte) error {
	n, err := io.ReadFull(c.r, p)
	c.bytesRead += uint64(n)
	if err == io.ErrUnexpectedEOF {
		return protocolErr("connection closed inside a chunk")
	}
	return err
}

// ReadMessage reads chunks until a whole message is assembled. The returned
// payload is freshly allocated and belongs to the caller.
func (c *ChunkReader) ReadMessage() (Message, error) {
	for {
		m, ok, err := c.readChunk()
		if err != nil || ok {
			return m, err
		}
	}
}

func (c *ChunkReader) readChunk() (Message, bool, error) {
	b := c.hdr[:1]
	if err := c.read(b); err != nil {
		return Message{}, false, err
	}
	fmtType := b[0] >> 6
	csid := uint32(b[0] & 0x3f)
	switch csid {
	case 0:
		if err := c.read(c.hdr[:1]); err != nil {
			return Message{}, false, err
		}
		csid = uint32(c.hdr[0]) + 64
	case 1:
		if err := c.read(c.hdr[:2]); err != nil {
			return Message{}, false, err
		}
		csid = uint32(c.hdr[1])<<8 + uint32(c.hdr[0]) + 64
	}
	cs := c.streams[csid]
	if cs == nil {
		if len(c.streams) >= maxChunkStreams {
			return Message{}, false, protocolErr("more than %d chunk streams", maxChunkStreams)
		}
		cs = &chunkStream{}
		c.streams[csid] = cs
	}
	if fmtType != 0 && !cs.started {
		return Message{}, false, protocolErr("chunk type %d on chunk stream %d before any type 0 header", fmtType, csid)
	}
	newMessage := cs.buf == nil
	if !newMessage && fmtType != 3 {
		return Message{}, false, protocolErr("new header on chunk stream %d inside a message", csid)
	}

	var tsField uint32
	switch fmtType {
	case 0:
		h := c.hdr[:11]
		if err := c.read(h); err != nil {
			return Message{}, false, err
		}
		tsField = be24(h[0:])
		cs.length = be24(h[3:])
		cs.typ = h[6]
		cs.streamID = binary.LittleEndian.Uint32(h[7:])
	case 1:
		h := c.hdr[:7]
		if err := c.read(h); err != nil {
			return Message{}, false, err
		}
		tsField = be24(h[0:])
		cs.length = be24(h[3:])
		cs.typ = h[6]
	case 2:
		h := c.hdr[:3]
		if err := c.read(h); err != nil {
			return Message{}, false, err
		}
		tsField = be24(h[0:])
	}
	if fmtType < 3 {
		cs.extended = tsField == 0xffffff
	}
	var extTS uint32
	if cs.extended {
		if err := c.read(c.hdr[:4]); err != nil {
			return Message{}, false, err
		}
		extTS = binary.BigEndian.Uint32(c.hdr[:4])
	}
	if fmtType < 3 {
		ts := tsField
		if cs.extended {
			ts = extTS
		}
		if fmtType == 0 {
			cs.timestamp = ts
			cs.delta = ts // a type 3 chunk after a type 0 one reuses its timestamp as the delta
			cs.started = true
		} else {
			cs.delta = ts
			cs.timestamp += ts
		}
	} else if newMessage {
		cs.timestamp += cs.delta
	}

	if newMessage {
		if cs.length > c.maxMessageSize {
			return Message{}, false, protocolErr("message of %d bytes exceeds the limit of %d", cs.length, c.maxMessageSize)
		}
		// Grow with the data actually received, never by the declared length alone.
		cs.buf = make([]byte, 0, min(cs.length, 64<<10))
	}
	n := cs.length - uint32(len(cs.buf))
	if n > c.chunkSize {
		n = c.chunkSize
	}
	start := len(cs.buf)
	if uint32(cap(cs.buf)-start) < n {
		grown := make([]byte, start, min(cs.length, max(2*uint32(cap(cs.buf)), uint32(start)+n)))
		copy(grown, cs.buf)
		cs.buf = grown
	}
	cs.buf = cs.buf[:start+int(n)]
	if err := c.read(cs.buf[start:]); err != nil {
		return Message{}, false, err
	}
	if uint32(len(cs.buf)) < cs.length {
		return Message{}, false, nil
	}
	m := Message{Type: cs.typ, StreamID: cs.streamID, Timestamp: cs.timestamp, Payload: cs.buf}
	cs.buf = nil
	return m, true, nil
}

func be24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

package rtmp

import (
	"bufio"
	"encoding/binary"
	"time"
)

// ReadMessage returns the next message that is not protocol control.
// Protocol control (chunk size, acknowledgements, window, ping) is handled
// here. Every call waits at most ReadTimeout for the peer.
func (c *Conn) ReadMessage() (Message, error) {
	for {
		c.setReadDeadline()
		m, err := c.reader.ReadMessage()
		if err != nil {
			return m, err
		}
		handled, err := c.received(m)
		if err != nil {
			return m, err
		}
		if !handled {
			return m, nil
		}
	}
}

// waitInput returns once the peer has sent something (or ReadTimeout has
// passed): Session.loop waits here, not deep in the chunk reader, so that a
// parked connection keeps a small stack (see Serve).
//
//go:noinline
func (c *Conn) waitInput() error {
	if c.br.Buffered() > 0 {
		return nil
	}
	c.setReadDeadline()
	_, err := c.br.Peek(1)
	return err
}

// setReadDeadline starts the wait of one read (a call of its own, like
// received: the frame of ReadMessage is on a parked reader's stack).
//
//go:noinline
func (c *Conn) setReadDeadline() {
	if d := time.Duration(c.readTimeout.Load()); d > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	} else {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
}

// received accounts for message m read from the peer (the acknowledgement
// window) and handles it if it is protocol control.
//
//go:noinline
func (c *Conn) received(m Message) (bool, error) {
	n := c.reader.BytesRead()
	c.BytesIn.Store(n)
	if w := uint64(c.peerWindow.Load()); w > 0 && n-c.lastAck >= w {
		c.lastAck = n
		_ = c.Send(ackMessage(uint32(n)))
	}
	if m.StreamID == 0 || m.Type <= TypeSetPeerBandwidth {
		return c.control(m)
	}
	return false, nil
}

func (c *Conn) control(m Message) (bool, error) {
	p := m.Payload
	switch m.Type {
	case TypeSetChunkSize:
		if len(p) < 4 {
			return true, protocolErr("short set chunk size")
		}
		return true, c.reader.SetChunkSize(binary.BigEndian.Uint32(p) & 0x7fffffff)
	case TypeAbort:
		if len(p) >= 4 {
			c.reader.Abort(binary.BigEndian.Uint32(p))
		}
		return true, nil
	case TypeAck:
		return true, nil
	case TypeWindowAckSize:
		if len(p) >= 4 {
			c.peerWindow.Store(binary.BigEndian.Uint32(p))
		}
		return true, nil
	case TypeSetPeerBandwidth:
		// Answer with our window, as servers expect from a client.
		if len(p) >= 4 {
			_ = c.Send(windowAckMessage(c.cfg.WindowAckSize))
		}
		return true, nil
	case TypeUserControl:
		if len(p) >= 6 && binary.BigEndian.Uint16(p) == EventPingRequest {
			resp := make([]byte, 6)
			binary.BigEndian.PutUint16(resp, EventPingResponse)
			copy(resp[2:], p[2:6])
			_ = c.Send(Message{Type: TypeUserControl, Payload: resp})
		}
		return false, nil // stream begin/EOF are interesting to clients
	}
	return false, nil
}

// readBuffer is the size of a connection's read buffer until it carries a
// stream in (ReadInbound switches a publisher's or an upstream pull's to
// inboundReadBuffer). Viewers send little: a thousand of them would keep
// 4 MiB in 4 KiB buffers.
const readBuffer = 1 << 10

// inboundReadBuffer is the read buffer of a connection that carries a
// stream in (ReadInbound). Through the viewers' 1 KiB buffer a stream came
// in a read or two per chunk (the header's refill, then the payload): a 2.6
// Mbit/s upstream in 4 KiB chunks took ~70 reads a second, a publisher's
// 128-byte chunks one a KiB; with 64 KiB a burst the peer wrote at once
// comes in one read.
const inboundReadBuffer = 64 << 10

// ReadInbound gives c the read buffer of a connection that carries a
// stream in: a publisher's, a relay's pull from its upstream. Only the
// goroutine that reads c calls it, between two messages; the bytes already
// buffered are read first.
func (c *Conn) ReadInbound() {
	if c.br.Size() >= inboundReadBuffer {
		return
	}
	c.br = bufio.NewReaderSize(c.br, inboundReadBuffer)
	c.reader.r = c.br
}

package rtmp

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// readCounter is a net.Conn that serves a byte stream and counts the reads
// the connection makes of it.
type readCounter struct {
	net.Conn // nil: only what a reading Conn calls is implemented
	r        *bytes.Reader
	reads    int
	largest  int
}

func (rc *readCounter) Read(p []byte) (int, error) {
	rc.reads++
	rc.largest = max(rc.largest, len(p))
	return rc.r.Read(p)
}
func (rc *readCounter) SetReadDeadline(time.Time) error { return nil }
func (rc *readCounter) Close() error                    { return nil }

// A connection that starts carrying a stream in (ReadInbound, between two
// messages, with bytes already buffered) reads every message intact, in
// order, and takes the rest of the stream in reads of the large buffer:
// a publisher's 128-byte chunks one read a KiB through the viewers' buffer.
func TestReadInbound(t *testing.T) {
	var stream bytes.Buffer
	w := NewChunkWriter() // 128-byte chunks, as ffmpeg and OBS publish
	var msgs []Message
	for i := range 60 {
		p := bytes.Repeat([]byte{byte(i)}, 3000+i*37)
		msgs = append(msgs, Message{Type: TypeVideo, StreamID: 1, Timestamp: uint32(i * 33), Payload: p})
	}
	for i := range msgs {
		w.Append(&msgs[i])
	}
	if err := w.Flush(&stream); err != nil {
		t.Fatal(err)
	}
	total := stream.Len()
	for _, inbound := range []bool{false, true} {
		rc := &readCounter{r: bytes.NewReader(stream.Bytes())}
		c := newConn(rc, ConnConfig{}, nil)
		for i := range msgs {
			m, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("inbound %v, message %d: %v", inbound, i, err)
			}
			if m.Timestamp != msgs[i].Timestamp || !bytes.Equal(m.Payload, msgs[i].Payload) {
				t.Fatalf("inbound %v, message %d: got %d bytes at %d, want %d at %d", inbound, i, len(m.Payload), m.Timestamp, len(msgs[i].Payload), msgs[i].Timestamp)
			}
			if i == 0 && inbound {
				if c.br.Buffered() == 0 {
					t.Fatal("nothing buffered after the first message: the switch is not tested mid-buffer")
				}
				c.ReadInbound()
				c.ReadInbound() // twice is once
			}
		}
		t.Logf("inbound %v: %d bytes in %d reads (largest asked %d)", inbound, total, rc.reads, rc.largest)
		switch {
		case !inbound && rc.reads < total/readBuffer:
			t.Errorf("viewer buffer: %d reads for %d bytes, want about one a KiB", rc.reads, total)
		case inbound && rc.reads > total/inboundReadBuffer+4:
			t.Errorf("inbound buffer: %d reads for %d bytes, want about one per %d", rc.reads, total, inboundReadBuffer)
		}
	}
}

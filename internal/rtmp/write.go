package rtmp

import (
	"encoding/binary"
	"time"

	"github.com/relaymesh/relaymesh/internal/av"
)

// What both write engines share: gathering control messages and media
// into the chunk writer, and accounting for what the kernel took.

// gather moves the queued control messages and, unless the kernel already
// holds enough media for the peer, a batch of media into the chunk writer.
// It reports whether the connection should close once that is written,
// whether media was held back, and the error of a media source that ended.
func (c *Conn) gather(now time.Time) (closeAfter, held bool, failed error) {
	c.mu.Lock()
	c.ctrlSpare, c.ctrl = c.ctrl, c.ctrlSpare[:0]
	c.binds = append(c.binds[:0], c.bindings...)
	closeAfter = c.closeAfter
	c.mu.Unlock()
	for i := range c.ctrlSpare {
		m := &c.ctrlSpare[i]
		c.writer.Append(m)
		if m.Type == TypeSetChunkSize && len(m.Payload) >= 4 {
			c.writer.SetChunkSize(binary.BigEndian.Uint32(m.Payload))
		}
	}
	clear(c.ctrlSpare)
	if cap(c.ctrlSpare) > keepControl {
		c.ctrlSpare = nil // grown by the connect and play exchange: give it back
	}
	binds := c.binds
	defer clear(binds)
	// Hold media back while the kernel already holds enough of it; ask it
	// every time for a peer that was slow lately.
	if now.Before(c.slowUntil) {
		c.recheck()
	}
	held = len(binds) > 0 && c.inflight != nil && c.inflight.backlogged(now, c.cfg.MaxNotSent, c.cfg.MaxInflight.Milliseconds())
	if held {
		c.latencyHeld(now)
		for _, b := range binds {
			if err := b.src.Err(); err != nil {
				c.failSource(b, err)
				failed = err
			}
		}
		return closeAfter, held, failed
	}
	c.batchMedia = false
	for _, b := range binds {
		if c.writer.Pending() >= c.cfg.BatchBytes {
			c.wake() // more to do after this flush
			break
		}
		frames, err := b.src.Poll(c.frames[:0], min(c.cfg.BatchBytes-c.writer.Pending(), c.pollBytes(now)))
		for _, f := range frames {
			c.appendFrame(b, f)
		}
		clear(frames)
		c.frames = frames[:0]
		if err != nil {
			c.failSource(b, err)
			failed = err
		}
	}
	return closeAfter, false, failed
}

// keepControl is how many queued control messages a connection keeps room
// for between batches: after the connect and play exchange a viewer gets a
// few (acknowledgements, pings), not a batch.
const keepControl = 2

// failSource queues what the peer is told when b's source ended with err.
func (c *Conn) failSource(b *binding, err error) {
	if b.onErr != nil {
		for _, m := range b.onErr(err) {
			c.writer.Append(&m)
		}
	}
}

// wrote accounts for n bytes handed to the kernel.
func (c *Conn) wrote(n int) {
	c.BytesOut.Add(uint64(n))
	if c.inflight != nil {
		c.inflight.wrote(n, c.batchMedia, c.batchFirst, c.batchLast)
	}
}

func (c *Conn) appendFrame(b *binding, f *av.Frame) {
	if f.Kind != av.KindEvent {
		if !c.batchMedia {
			c.batchMedia, c.batchFirst = true, f.Timestamp
		}
		c.batchLast = f.Timestamp
		c.burst.add(f)
		c.latencyFrame(b, f)
	}
	switch f.Kind {
	case av.KindAudio, av.KindVideo, av.KindData:
		c.writer.AppendMedia(av.TypeOf(f.Kind), b.streamID, f.Timestamp, f.Payload)
	case av.KindEvent:
		if b.onEvent != nil {
			for _, m := range b.onEvent(f.Event) {
				c.writer.Append(&m)
			}
		}
	}
}

package rtmp

import (
	"encoding/binary"
	"io"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultChunkSize is the chunk size relaymesh announces for what it sends:
// large chunks mean few headers and few iovecs per frame.
const DefaultChunkSize = 65536

// ChunkWriter turns messages into chunks without copying their payloads: it
// collects header bytes in a reusable scratch buffer and payload slices by
// reference, and hands them to the kernel in one writev (net.Buffers) per
// Flush. One goroutine owns a ChunkWriter.
type ChunkWriter struct {
	chunkSize uint32
	scratch   []byte      // header bytes of the pending batch
	bufs      net.Buffers // iovecs of the pending batch
	off       int         // bufs[:off] were written by FlushSome
	vec       net.Buffers // backing array reused across flushes
	pending   int         // payload + header bytes pending
	iov       []unix.Iovec
	spares    *writeSpares // lent by a Flusher worker (nil: the writer's own)
}

// NewChunkWriter starts with the protocol's initial chunk size (128); call
// SetChunkSize after sending a Set Chunk Size message.
func NewChunkWriter() *ChunkWriter {
	return &ChunkWriter{chunkSize: 128, scratch: make([]byte, 0, scratchSize)}
}

// ChunkSize is the size in force for what this writer sends.
func (w *ChunkWriter) ChunkSize() uint32 { return w.chunkSize }

// SetChunkSize changes the chunk size for messages appended from now on.
func (w *ChunkWriter) SetChunkSize(n uint32) { w.chunkSize = n }

// Pending is the number of bytes waiting for Flush.
func (w *ChunkWriter) Pending() int { return w.pending }

// scratchSize is the header scratch a writer starts with and keeps: a
// round's headers for a viewer (12 bytes per message) fit; a join burst
// grows it for a while, and it is given back after that batch, because a
// thousand viewers would otherwise each keep a burst's worth.
const scratchSize = 512

// header reserves n bytes of header scratch. When the scratch is full a new
// array is started; slices already handed to bufs keep the old one alive
// until the flush, so nothing is copied.
func (w *ChunkWriter) header(n int) []byte {
	if cap(w.scratch) == 0 && w.spares != nil {
		w.scratch = w.spares.getScratch()
	}
	if len(w.scratch)+n > cap(w.scratch) {
		w.scratch = make([]byte, 0, max(2*cap(w.scratch), n, scratchSize))
	}
	s := len(w.scratch)
	w.scratch = w.scratch[:s+n]
	return w.scratch[s : s+n : s+n]
}

// type3 returns the header of a continuation chunk on csid (< 64).
var type3 = func() (t [64][1]byte) {
	for i := range t {
		t[i][0] = 0xc0 | byte(i)
	}
	return
}()

// Append queues m, written as one type 0 chunk followed by type 3 chunks.
// m.Payload is referenced, not copied: it must stay unchanged until Flush.
func (w *ChunkWriter) Append(m *Message) {
	w.appendOn(csidFor(m.Type), m.Type, m.StreamID, m.Timestamp, m.Payload)
}

// AppendMedia queues a media or data message whose payload is shared.
func (w *ChunkWriter) AppendMedia(typ uint8, streamID, ts uint32, payload []byte) {
	w.appendOn(csidFor(typ), typ, streamID, ts, payload)
}

func (w *ChunkWriter) appendOn(csid uint32, typ uint8, streamID, ts uint32, payload []byte) {
	if w.bufs == nil {
		if w.vec == nil && w.spares != nil {
			w.vec = w.spares.getVec()
		}
		w.bufs = w.vec[:0]
	}
	extended := ts >= 0xffffff
	hn := 12
	if extended {
		hn += 4
	}
	h := w.header(hn)
	h[0] = byte(csid) // type 0, csid < 64
	tsField := ts
	if extended {
		tsField = 0xffffff
	}
	put24(h[1:], tsField)
	put24(h[4:], uint32(len(payload)))
	h[7] = typ
	binary.LittleEndian.PutUint32(h[8:], streamID)
	if extended {
		binary.BigEndian.PutUint32(h[12:], ts)
	}
	w.bufs = append(w.bufs, h)
	w.pending += hn + len(payload)
	cs := int(w.chunkSize)
	for first := true; first || len(payload) > 0; first = false {
		if !first {
			if extended {
				c := w.header(5)
				c[0] = 0xc0 | byte(csid)
				binary.BigEndian.PutUint32(c[1:], ts)
				w.bufs = append(w.bufs, c)
				w.pending += 5
			} else {
				w.bufs = append(w.bufs, type3[csid][:])
				w.pending++
			}
		}
		n := min(cs, len(payload))
		if n > 0 {
			w.bufs = append(w.bufs, payload[:n:n])
		}
		payload = payload[n:]
	}
}

// Flush writes everything pending in one writev and resets the batch.
func (w *ChunkWriter) Flush(dst io.Writer) error {
	if w.pending == 0 {
		return nil
	}
	all := w.bufs
	w.bufs = w.bufs[w.off:]
	_, err := w.bufs.WriteTo(dst) // consumes w.bufs; a field, so nothing escapes
	w.bufs = all
	w.reset()
	return err
}

// reset forgets the written batch, keeping the grown backing arrays but no
// references to payloads, so they can be collected.
func (w *ChunkWriter) reset() {
	if w.bufs != nil {
		clear(w.bufs)
		w.vec = w.bufs[:0]
		w.bufs = nil
	}
	w.off = 0
	w.pending = 0
	if w.spares != nil {
		// Back to the worker for the next connection (the arrays grown
		// by a join burst to the collector).
		w.spares.putVec(w.vec)
		w.spares.putScratch(w.scratch)
		w.vec, w.scratch = nil, nil
		return
	}
	if cap(w.vec) > keepIovecs {
		w.vec = nil // grown by a join burst: give it back
	}
	if cap(w.iov) > keepIovecs {
		w.iov = nil
	}
	if cap(w.scratch) > 4*scratchSize {
		w.scratch = make([]byte, 0, scratchSize)
	} else {
		w.scratch = w.scratch[:0]
	}
}

// keepIovecs is how many buffers a writer keeps room for between batches
// (a round's frames for a viewer take a few each).
const keepIovecs = 64

// maxIovecs is how many buffers one writev takes (Linux's IOV_MAX).
const maxIovecs = 1024

// FlushSome writes what the socket fd takes without waiting, with as few
// writev calls as possible, and keeps the rest pending for the next call. It
// reports whether everything was written. fd must be non-blocking; on a
// full socket (EAGAIN or a short write) it returns false and no error.
func (w *ChunkWriter) FlushSome(fd int) (bool, error) {
	iovs := &w.iov
	if w.spares != nil {
		iovs = &w.spares.iov // only for the call: shared by the worker's connections
	}
	for w.pending > 0 {
		iov := (*iovs)[:0]
		want := 0
		for _, b := range w.bufs[w.off:min(len(w.bufs), w.off+maxIovecs)] {
			iov = append(iov, unix.Iovec{Base: &b[0], Len: uint64(len(b))})
			want += len(b)
		}
		*iovs = iov
		// RawSyscall: the call never blocks, so the scheduler need not know
		// (with Syscall, sysmon polls at its fastest rate to retake the
		// processors of a thousand short writevs per second).
		r, _, errno := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		clear(iov) // no references to payloads past the call
		if cap(iov) > maxIovecs {
			*iovs = nil
		}
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false, nil
		default:
			return false, errno
		}
		n := int(r)
		w.consume(n)
		if n < want {
			return w.pending == 0, nil
		}
	}
	w.reset()
	return true, nil
}

// consume drops the first n written bytes of the pending batch.
func (w *ChunkWriter) consume(n int) {
	w.pending -= n
	for n > 0 {
		b := w.bufs[w.off]
		if len(b) > n {
			w.bufs[w.off] = b[n:]
			return
		}
		n -= len(b)
		w.bufs[w.off] = nil
		w.off++
	}
	if w.pending == 0 {
		w.reset()
	}
}

func put24(b []byte, v uint32) {
	b[0] = byte(v >> 16)
	b[1] = byte(v >> 8)
	b[2] = byte(v)
}

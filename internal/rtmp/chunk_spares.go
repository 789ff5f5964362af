package rtmp

import (
	"net"

	"golang.org/x/sys/unix"
)

// writeSpares are the iovec arrays and header scratch that a Flusher worker
// lends to the chunk writers of the connections it serves one after
// another. A connection whose batch the socket took whole gives them back
// at once, so between rounds it keeps none (a thousand viewers would
// otherwise each keep ~2 KB of them); one whose socket held part of its
// batch back keeps them until the rest is written. Only the worker's
// goroutine uses them.
type writeSpares struct {
	vecs    []net.Buffers
	scratch [][]byte
	iov     []unix.Iovec // for the duration of one writev
}

// maxSpares bounds the arrays of each kind a worker keeps: as many as its
// connections hold at once while their sockets are full, up to this, are
// reused rather than allocated again.
const maxSpares = 64

func (s *writeSpares) getVec() net.Buffers {
	n := len(s.vecs)
	if n == 0 {
		return nil
	}
	v := s.vecs[n-1]
	s.vecs[n-1] = nil
	s.vecs = s.vecs[:n-1]
	return v
}

func (s *writeSpares) putVec(v net.Buffers) {
	if cap(v) > 0 && cap(v) <= keepIovecs && len(s.vecs) < maxSpares {
		s.vecs = append(s.vecs, v[:0])
	}
}

func (s *writeSpares) getScratch() []byte {
	n := len(s.scratch)
	if n == 0 {
		return nil
	}
	b := s.scratch[n-1]
	s.scratch[n-1] = nil
	s.scratch = s.scratch[:n-1]
	return b
}

func (s *writeSpares) putScratch(b []byte) {
	if cap(b) > 0 && cap(b) <= 4*scratchSize && len(s.scratch) < maxSpares {
		s.scratch = append(s.scratch, b[:0])
	}
}

// borrow makes w use s's arrays from now on (and drop its own).
func (w *ChunkWriter) borrow(s *writeSpares) {
	w.spares = s
	if w.pending == 0 {
		w.scratch, w.vec, w.iov = nil, nil, nil
	}
}

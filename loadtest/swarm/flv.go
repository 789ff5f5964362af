package swarm

import (
	"bufio"
	"encoding/binary"
	"io"
)

// flvWriter writes received messages as an FLV file (for decoding checks).
type flvWriter struct {
	w  *bufio.Writer
	c  io.Closer
	hd [15]byte
}

func newFLVWriter(w io.WriteCloser) *flvWriter {
	f := &flvWriter{w: bufio.NewWriter(w), c: w}
	f.w.Write([]byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0})
	return f
}

func (f *flvWriter) Write(typ uint8, ts uint32, p []byte) {
	h := f.hd[:11]
	h[0] = typ
	h[1], h[2], h[3] = byte(len(p)>>16), byte(len(p)>>8), byte(len(p))
	h[4], h[5], h[6], h[7] = byte(ts>>16), byte(ts>>8), byte(ts), byte(ts>>24)
	h[8], h[9], h[10] = 0, 0, 0
	f.w.Write(h)
	f.w.Write(p)
	var back [4]byte
	binary.BigEndian.PutUint32(back[:], uint32(11+len(p)))
	f.w.Write(back[:])
}

func (f *flvWriter) Close() {
	f.w.Flush()
	f.c.Close()
}

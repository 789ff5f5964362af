// Package flvfile reads FLV files into frames of the project's media model.
// It exists for tests, benchmarks and tools that need a real stream without a
// network: the packager's end-to-end tests read an encoder's FLV output with it.
package flvfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/internal/codec"
)

// MaxTagSize bounds one tag body. FLV allows 16 MiB; a tag bigger than this
// is treated as corrupt input.
const MaxTagSize = 8 << 20

// ErrFormat is wrapped by every error about malformed input.
var ErrFormat = errors.New("flvfile: malformed FLV")

// Reader returns the tags of an FLV stream one at a time as frames.
type Reader struct {
	r      io.Reader
	hdr    [11]byte
	nalLen int
	start  bool
}

// NewReader reads and checks the FLV file header.
func NewReader(r io.Reader) (*Reader, error) {
	var h [9]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	if h[0] != 'F' || h[1] != 'L' || h[2] != 'V' {
		return nil, fmt.Errorf("%w: bad signature", ErrFormat)
	}
	off := binary.BigEndian.Uint32(h[5:9])
	if off < 9 || off > 1024 {
		return nil, fmt.Errorf("%w: header size %d", ErrFormat, off)
	}
	if _, err := io.CopyN(io.Discard, r, int64(off-9)); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	return &Reader{r: r}, nil
}

// Next returns the next audio, video or data tag as a frame. Tags of other
// types are skipped. It returns io.EOF at a clean end of the stream.
func (r *Reader) Next() (*av.Frame, error) {
	for {
		// PreviousTagSize (4 bytes) precedes every tag.
		var prev [4]byte
		if _, err := io.ReadFull(r.r, prev[:]); err != nil {
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%w: previous tag size: %v", ErrFormat, err)
		}
		n, err := io.ReadFull(r.r, r.hdr[:])
		if err != nil {
			if n == 0 && err == io.EOF {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%w: tag header: %v", ErrFormat, err)
		}
		typ := r.hdr[0] & 0x1f
		size := int(r.hdr[1])<<16 | int(r.hdr[2])<<8 | int(r.hdr[3])
		ts := uint32(r.hdr[4])<<16 | uint32(r.hdr[5])<<8 | uint32(r.hdr[6]) | uint32(r.hdr[7])<<24
		if size > MaxTagSize {
			return nil, fmt.Errorf("%w: tag of %d bytes", ErrFormat, size)
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r.r, body); err != nil {
			return nil, fmt.Errorf("%w: tag body: %v", ErrFormat, err)
		}
		kind, ok := av.KindOf(typ)
		if !ok || typ == av.TypeDataAMF3 { // FLV files carry AMF0 data only
			continue
		}
		f := av.Wrap(kind, ts, body, r.nalLen)
		if f.Kind == av.KindVideo && f.SeqHeader {
			if c, err := codec.ParseAVC(body); err == nil {
				r.nalLen = c.NALLengthSize
			}
		}
		return f, nil
	}
}

// ReadAll reads every frame of an FLV stream, up to max frames.
func ReadAll(rd io.Reader, max int) ([]*av.Frame, error) {
	r, err := NewReader(rd)
	if err != nil {
		return nil, err
	}
	var out []*av.Frame
	for len(out) < max {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, fmt.Errorf("%w: more than %d frames", ErrFormat, max)
}

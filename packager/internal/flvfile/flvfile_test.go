package flvfile

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/relaymesh/relaymesh/internal/av"
)

// tag builds one FLV tag followed by nothing (the next PreviousTagSize is the
// caller's business).
func tag(typ byte, ts uint32, body []byte) []byte {
	n := len(body)
	b := []byte{typ, byte(n >> 16), byte(n >> 8), byte(n), byte(ts >> 16), byte(ts >> 8), byte(ts), byte(ts >> 24), 0, 0, 0}
	b = append(b, body...)
	return append(b, 0, 0, 0, byte(11+n))
}

func file(tags ...[]byte) []byte {
	b := []byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0}
	for _, t := range tags {
		b = append(b, t...)
	}
	return b[:len(b)-4] // PreviousTagSize precedes each tag; the last one is optional
}

func TestReadFrames(t *testing.T) {
	seq := []byte{0x17, 0, 0, 0, 0, 1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 0}
	key := []byte{0x17, 1, 0, 0, 40, 0, 0, 0, 2, 0x65, 0x88}
	aac := []byte{0xaf, 1, 0x21}
	data := append([]byte{2, 0, 10}, "onMetaData"...)
	in := file(tag(18, 0, data), tag(9, 0, seq), tag(9, 0x01000010, key), tag(8, 23, aac), tag(7, 1, []byte{1}))
	fr, err := ReadAll(bytes.NewReader(in), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(fr) != 4 {
		t.Fatalf("got %d frames, want 4", len(fr))
	}
	if !fr[0].Metadata || !fr[1].SeqHeader || !fr[2].Keyframe || fr[2].CTS != 40 || fr[2].Timestamp != 0x01000010 || fr[3].Kind != av.KindAudio {
		t.Fatalf("frames: %v", fr)
	}
}

func TestRejects(t *testing.T) {
	if _, err := NewReader(bytes.NewReader([]byte("GIF89a..."))); !errors.Is(err, ErrFormat) {
		t.Fatalf("bad signature: %v", err)
	}
	big := []byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0}
	r, err := NewReader(bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrFormat) {
		t.Fatalf("oversized tag: %v", err)
	}
	trunc := []byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0, 0, 9}
	r, _ = NewReader(bytes.NewReader(trunc))
	if _, err := r.Next(); !errors.Is(err, ErrFormat) {
		t.Fatalf("truncated tag: %v", err)
	}
	empty := []byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9}
	r, _ = NewReader(bytes.NewReader(empty))
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("empty file: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte{'F', 'L', 'V', 1, 5, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0x17, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ReadAll(bytes.NewReader(b), 1000)
		if err != nil && !errors.Is(err, ErrFormat) {
			t.Fatalf("unexpected error type: %v", err)
		}
		for _, x := range fr {
			if x == nil {
				t.Fatal("nil frame")
			}
		}
	})
}

package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// A real x264 sequence header (640x360, High profile) and AAC-LC 44.1 kHz mono.
var (
	testAVCSeq = []byte{0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64, 0x00, 0x1e, 0xff, 0xe1, 0x00, 0x1a, 0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2d, 0x96, 0x01, 0x00, 0x06, 0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0, 0xfd, 0xf8, 0xf8, 0x00}
	testAACSeq = []byte{0xaf, 0x00, 0x12, 0x08, 0x56, 0xe5, 0x00}
)

func TestParseAVC(t *testing.T) {
	c, err := ParseAVC(testAVCSeq)
	if err != nil {
		t.Fatal(err)
	}
	if c.Width != 640 || c.Height != 360 || c.NALLengthSize != 4 || c.Codec != "avc1.64001e" || len(c.SPS) != 1 || len(c.PPS) != 1 {
		t.Fatalf("got %+v", c)
	}
	for _, bad := range [][]byte{nil, {0x17, 0}, {0x17, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7}, testAVCSeq[:20],
		[]byte("\x17\x00\x00\x00\x00\x01d\x00\x1f\xff\xe0\x00")} { // no SPS
		if _, err := ParseAVC(bad); !errors.Is(err, ErrConfig) {
			t.Fatalf("%x: err %v", bad, err)
		}
	}
}

func TestParseAAC(t *testing.T) {
	c, err := ParseAAC(testAACSeq)
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleRate != 44100 || c.Channels != 1 || c.FrameLen != 1024 || c.Codec != "mp4a.40.2" || !bytes.Equal(c.ASC, testAACSeq[2:]) {
		t.Fatalf("got %+v", c)
	}
	for _, bad := range [][]byte{nil, {0xaf, 1, 0x12}, {0xaf, 0, 0xff}, {0x2f, 0, 0x12, 0x08}} {
		if _, err := ParseAAC(bad); !errors.Is(err, ErrConfig) {
			t.Fatalf("%x: err %v", bad, err)
		}
	}
}

// FuzzParseAVC checks what ParseAVC accepts against a second reading: the
// record's own fields read by hand: the NAL length size, the first SPS, and
// the profile, constraints and level the codec string is made of. (A second
// SPS decoder is no oracle for the picture size: on hostile SPSs the two
// libraries disagree about cropping and emulation prevention.)
func FuzzParseAVC(f *testing.F) {
	f.Add(testAVCSeq)
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := ParseAVC(p)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		rec := p[5:]
		if want := int(rec[4]&3) + 1; c.NALLengthSize != want {
			t.Fatalf("NAL length size %d, the record says %d", c.NALLengthSize, want)
		}
		if n := int(binary.BigEndian.Uint16(rec[6:8])); rec[5]&0x1f == 0 || 8+n > len(rec) || !bytes.Equal(c.SPS[0], rec[8:8+n]) {
			t.Fatalf("first SPS %x is not the record's", c.SPS[0])
		}
		if c.Width < 1 || c.Height < 1 || c.Width > MaxPictureSide || c.Height > MaxPictureSide {
			t.Fatalf("size %dx%d", c.Width, c.Height)
		}
		if b := rbsp(c.SPS[0][1:], 3); len(b) < 3 || c.Codec != fmt.Sprintf("avc1.%02x%02x%02x", b[0], b[1], b[2]) {
			t.Fatalf("codec %s is not the SPS's profile, constraints and level (%x)", c.Codec, c.SPS[0])
		}
	})
}

// rbsp returns the first n payload bytes of a NAL unit body, without its
// emulation prevention bytes (00 00 03 → 00 00).
func rbsp(b []byte, n int) []byte {
	var out []byte
	zeros := 0
	for _, x := range b {
		if len(out) == n {
			break
		}
		if zeros >= 2 && x == 3 {
			zeros = 0
			continue
		}
		if x == 0 {
			zeros++
		} else {
			zeros = 0
		}
		out = append(out, x)
	}
	return out
}

// FuzzParseAAC: what is accepted is in bounds and keeps the config's bytes.
func FuzzParseAAC(f *testing.F) {
	f.Add(testAACSeq)
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := ParseAAC(p)
		if err != nil {
			return
		}
		if c.SampleRate < 8000 || c.SampleRate > 48000 || c.Channels < 1 || c.Channels > 8 || (c.FrameLen != 1024 && c.FrameLen != 960) || !bytes.Equal(c.ASC, p[2:]) {
			t.Fatalf("got %+v from %x", c, p)
		}
	})
}

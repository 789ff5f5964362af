package packager

import (
	"bytes"
	"errors"
	"testing"
)

// A real x264 sequence header (640x360, High profile) and AAC-LC 44.1 kHz mono.
var (
	testAVCSeq = []byte{0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64, 0x00, 0x1e, 0xff, 0xe1, 0x00, 0x1a, 0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2d, 0x96, 0x01, 0x00, 0x06, 0x68, 0xeb, 0xe3, 0xcb, 0x22, 0xc0, 0xfd, 0xf8, 0xf8, 0x00}
	testAACSeq = []byte{0xaf, 0x00, 0x12, 0x08, 0x56, 0xe5, 0x00}
)

// The configurations are read by internal/codec (tested there); the
// packager keeps what it needs of them.
func TestConfigsFromCodec(t *testing.T) {
	vc, err := parseVideoConfig(testAVCSeq)
	if err != nil || vc.width != 640 || vc.height != 360 || vc.nalLen != 4 || vc.codec != "avc1.64001e" || !bytes.Equal(vc.raw, testAVCSeq) {
		t.Fatalf("video: %+v, %v", vc, err)
	}
	ac, err := parseAudioConfig(testAACSeq)
	if err != nil || ac.sampleRate != 44100 || ac.channels != 1 || ac.frameLen != 1024 || ac.codec != "mp4a.40.2" || !bytes.Equal(ac.raw, testAACSeq) {
		t.Fatalf("audio: %+v, %v", ac, err)
	}
	if _, err := parseVideoConfig(testAVCSeq[:20]); !errors.Is(err, errCodec) {
		t.Fatalf("truncated video: %v", err)
	}
	if _, err := parseAudioConfig([]byte{0xaf, 0, 0xff}); !errors.Is(err, errCodec) {
		t.Fatalf("bad ASC: %v", err)
	}
}

func TestAVCCConversion(t *testing.T) {
	au2 := []byte{0, 2, 0x65, 1, 0, 1, 0x06}
	out, err := toAVCC4(au2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0, 0, 2, 0x65, 1, 0, 0, 0, 1, 0x06}
	if !bytes.Equal(out, want) {
		t.Fatalf("got %x want %x", out, want)
	}
	if _, err := toAVCC4([]byte{0, 9, 1}, 2); err == nil {
		t.Fatal("accepted a truncated NAL unit")
	}
}

// FuzzSequenceHeaders feeds hostile sequence headers and access units to the
// parsers: errors are fine, panics are not.
func FuzzSequenceHeaders(f *testing.F) {
	f.Add(testAVCSeq, 4)
	f.Add(testAACSeq, 2)
	f.Fuzz(func(t *testing.T, b []byte, nalLen int) {
		if vc, err := parseVideoConfig(b); err == nil {
			if _, err := videoInit(vc); err != nil {
				t.Logf("init: %v", err)
			}
		}
		if ac, err := parseAudioConfig(b); err == nil {
			if _, err := audioInit(ac); err != nil {
				t.Logf("init: %v", err)
			}
		}
		_, _ = splitAVCC(nil, b, nalLen)
		_, _ = toAVCC4(b, nalLen)
	})
}

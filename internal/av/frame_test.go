package av

import "testing"

func avc(frameType byte, pktType byte, cts int32, nals ...[]byte) []byte {
	p := []byte{frameType<<4 | CodecAVC, pktType, byte(cts >> 16), byte(cts >> 8), byte(cts)}
	for _, n := range nals {
		l := len(n)
		p = append(p, byte(l>>24), byte(l>>16), byte(l>>8), byte(l))
		p = append(p, n...)
	}
	return p
}

func TestClassifyVideo(t *testing.T) {
	cases := []struct {
		name           string
		payload        []byte
		key, disp, seq bool
		cts            int32
	}{
		{"seq", []byte{0x17, 0, 0, 0, 0, 1, 0x64, 0, 0x1f, 0xff}, false, false, true, 0},
		{"idr", avc(1, 1, 40, []byte{0x65, 1, 2}), true, false, false, 40},
		{"p ref", avc(2, 1, 0, []byte{0x41, 1}), false, false, false, 0},
		{"b nonref", avc(2, 1, -40, []byte{0x01, 1}), false, true, false, -40},
		{"sei + nonref slice", avc(2, 1, 0, []byte{0x06, 5}, []byte{0x01, 9}), false, true, false, 0},
		{"mixed ref", avc(2, 1, 0, []byte{0x01, 9}, []byte{0x21, 9}), false, false, false, 0},
		{"truncated", []byte{0x27, 1, 0, 0, 0, 0, 0, 0, 9, 1}, false, false, false, 0},
		{"flv disposable", []byte{0x32, 1, 2}, false, true, false, 0},
		{"empty", nil, false, false, false, 0},
	}
	for _, c := range cases {
		f := New(KindVideo, 0, c.payload, 4)
		if f.Keyframe != c.key || f.Disposable != c.disp || f.SeqHeader != c.seq || f.CTS != c.cts {
			t.Errorf("%s: got %v cts=%d", c.name, f, f.CTS)
		}
	}
}

func TestAudioAndData(t *testing.T) {
	if f := New(KindAudio, 0, []byte{0xaf, 0, 0x12, 0x10}, 0); !f.SeqHeader || f.Codec != CodecAAC || f.Droppable() {
		t.Fatalf("aac seq: %v", f)
	}
	if f := New(KindAudio, 0, []byte{0xaf, 1, 0x21}, 0); f.SeqHeader || !f.Droppable() {
		t.Fatalf("aac raw: %v", f)
	}
	meta := append([]byte{2, 0, 13}, "@setDataFrame"...)
	meta = append(meta, 2, 0, 10)
	meta = append(meta, "onMetaData"...)
	meta = append(meta, 3, 0, 0, 9)
	f := New(KindData, 0, meta, 0)
	if !f.Metadata || f.Droppable() {
		t.Fatalf("meta: %v", f)
	}
	if s := StripSetDataFrame(meta); DataName(s) != "onMetaData" || len(s) != len(meta)-16 {
		t.Fatalf("strip: %q", s)
	}
}

func FuzzClassify(f *testing.F) {
	f.Add([]byte{0x17, 1, 0, 0, 0, 0, 0, 0, 2, 0x65, 0}, 4)
	f.Add([]byte{0x27, 1, 0, 0, 0, 0, 0, 2, 0x01}, 2)
	f.Fuzz(func(t *testing.T, p []byte, n int) {
		for _, k := range []Kind{KindAudio, KindVideo, KindData} {
			New(k, 0, p, n)
		}
		StripSetDataFrame(p)
	})
}

// TypeOf is KindOf's inverse for every kind of frame sent.
func TestTypeOfInvertsKindOf(t *testing.T) {
	for _, k := range []Kind{KindAudio, KindVideo, KindData} {
		if got, ok := KindOf(TypeOf(k)); !ok || got != k {
			t.Errorf("KindOf(TypeOf(%v)) = %v, %v", k, got, ok)
		}
	}
	if k, ok := KindOf(TypeDataAMF3); !ok || k != KindData {
		t.Errorf("AMF3 data: %v, %v", k, ok)
	}
	if _, ok := KindOf(20); ok || TypeOf(KindEvent) != 0 {
		t.Error("commands and events are no media")
	}
}

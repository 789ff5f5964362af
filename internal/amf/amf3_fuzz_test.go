package amf

import (
	"math"
	"testing"
)

// FuzzDecodeAMF3: the AMF3 reader never panics, and whatever it accepts
// re-encodes, as AMF3 and as AMF0 (with its AMF3 fallback), to bytes that
// decode to an equal value. Seeds in testdata/fuzz/FuzzDecodeAMF3 cover
// every marker.
func FuzzDecodeAMF3(f *testing.F) {
	f.Add(connectAMF3()[1:])
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := readAMF3(b, 0, MaxDepth)
		if err != nil {
			return
		}
		if n < 1 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		enc, err := AppendAMF3(nil, v)
		if err != nil {
			t.Fatalf("AMF3 re-encode of %#v: %v", v, err)
		}
		v3, n3, err := readAMF3(enc, 0, MaxDepth)
		if err != nil || n3 != len(enc) {
			t.Fatalf("decode(AMF3 encode(v)): %v (%d of %d bytes)", err, n3, len(enc))
		}
		if !valueEqual(v, v3) {
			t.Fatalf("AMF3 round trip\n %#v\n %#v", v, v3)
		}
		enc0, err := AppendValue(nil, v)
		if err != nil {
			t.Fatalf("AMF0 re-encode of %#v: %v", v, err)
		}
		v0, err := DecodeValue(enc0)
		if err != nil {
			t.Fatalf("decode(AMF0 encode(v)): %v", err)
		}
		if !valueEqual(v, v0) {
			t.Fatalf("AMF0 round trip\n %#v\n %#v", v, v0)
		}
	})
}

func TestNumberString(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", math.Copysign(0, -1): "0", 100000: "100000", -3: "-3", 1.5: "1.5", 1e21: "1e+21",
		1e-7: "1e-7", 2.5e-300: "2.5e-300", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", math.NaN(): "NaN",
	} {
		if got := numberString(f); got != want {
			t.Errorf("%v: %q, want %q", f, got, want)
		}
	}
}

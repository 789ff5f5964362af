package sharedobject

import (
	"path/filepath"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes and
// decodes to an equal message.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*.hex")
	more, _ := filepath.Glob("testdata/decode_only/*.hex")
	for _, p := range append(files, more...) {
		f.Add(readHex(f, p), false)
	}
	roomy := Limits{MaxMessageBytes: 8 << 20, MaxEvents: 1 << 20}
	f.Fuzz(func(t *testing.T, payload []byte, amf3 bool) {
		m, err := Decode(payload, amf3)
		if err != nil {
			return
		}
		b, err := m.AppendEncode(nil, amf3)
		if err != nil {
			t.Fatalf("re-encode of %#v: %v", m, err)
		}
		// Splitting multi-pair Change events adds headers, so the second
		// decode gets room beyond the default message size.
		m2, err := roomy.Decode(b, amf3)
		if err != nil {
			t.Fatalf("decode(encode(m)): %v", err)
		}
		if !Equal(m, m2) {
			t.Fatalf("decode(encode(m)) != m\n %#v\n %#v", m, m2)
		}
	})
}

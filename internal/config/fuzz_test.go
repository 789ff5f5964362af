package config

import (
	"os"
	"testing"
)

// Any file gives a configuration or an error, never a panic, and the error
// names no Go type.
func FuzzConfigDecode(f *testing.F) {
	if b, err := os.ReadFile("../../docs/relaymesh.example.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("rtmp:\n  lisen: x\n"))
	f.Add([]byte("shared_objects:\n  rules:\n    - {op: write, who: anyone}\n"))
	f.Add([]byte("a: &x [1]\nb: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		c := Default()
		_ = c.decode("fuzz.yaml", data)
		_ = c.Validate()
	})
}

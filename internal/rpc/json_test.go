package rpc

import (
	"testing"
	"time"
)

// Every value the AMF0 and AMF3 readers produce converts to JSON; an AMF3
// ByteArray becomes base64, as encoding/json writes []byte.
func TestToJSONValues(t *testing.T) {
	in := map[string]any{
		"n": 1.5, "s": "x", "b": true, "nil": nil,
		"d":     time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		"bytes": []byte{0xde, 0xad, 0xbe, 0xef},
		"list":  []any{1.0, "two"},
	}
	v, err := ToJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["bytes"] != "3q2+7w==" || m["d"] != "2026-11-30T10:00:00Z" || m["n"] != 1.5 {
		t.Fatalf("got %v", m)
	}
}

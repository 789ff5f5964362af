package rpc

import (
	"testing"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

// FuzzParseMeshCall feeds command payloads (as an upstream would send them)
// through rtmp.ParseCommand and ParseMeshCall: errors are fine, panics not.
func FuzzParseMeshCall(f *testing.F) {
	for _, t := range []Target{{Method: "notice", Args: []any{"x", 1.0}}, {To: "r1:c3", Method: "direct"}} {
		m, err := MeshCallMessage(t)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m.Payload)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		cmd, err := rtmp.ParseCommand(rtmp.Message{Type: rtmp.TypeCommandAMF0, Payload: payload})
		if err != nil {
			return
		}
		cmd.Name = MeshCall
		tg, err := ParseMeshCall(cmd)
		if err != nil {
			return
		}
		if !ValidMethod(tg.Method) || len(tg.To) > MaxClientBytes {
			t.Fatalf("accepted %+v", tg)
		}
		_ = ClientOf(cmd)
	})
}

// FuzzParseJSON checks the JSON reader of webhook answers and the HTTP API:
// whatever it accepts converts back to JSON and encodes as AMF0.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(`{"ok":true,"n":[1,2,{"a":null}]}`))
	f.Add([]byte(`"text"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseJSON(b)
		if err != nil {
			return
		}
		if _, err := ToJSON(v); err != nil {
			t.Fatalf("ToJSON of parsed %q: %v", b, err)
		}
		if _, err := ResultMessage(1, v); err != nil {
			t.Fatalf("AMF0 encoding of parsed %q: %v", b, err)
		}
	})
}

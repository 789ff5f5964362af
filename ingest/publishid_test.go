package ingest

import (
	"testing"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/packager"
)

// TestPublishIDInMetadata: the publish id is added to onMetaData (what the
// packagers of the mesh read) and other data messages pass unchanged.
func TestPublishIDInMetadata(t *testing.T) {
	meta := amf.MustEncode("onMetaData", amf.ECMAArray{"width": 640.0, "encoder": "x"})
	out := withPublishID(meta, "abc123")
	_, n, err := amf.ReadValue(out, amf.MaxDepth)
	if err != nil || av.DataName(out) != "onMetaData" {
		t.Fatalf("%v %q", err, av.DataName(out))
	}
	v, _, err := amf.ReadValue(out[n:], amf.MaxDepth)
	obj, ok := amf.Object(v)
	if err != nil || !ok || obj[packager.PublishIDKey] != "abc123" || obj["width"] != 640.0 || obj["encoder"] != "x" {
		t.Fatalf("%v %v", err, obj)
	}
	other := amf.MustEncode("onCuePoint", amf.ECMAArray{"name": "x"})
	if string(withPublishID(other, "abc123")) != string(other) {
		t.Error("onCuePoint changed")
	}
}

func FuzzPublishID(f *testing.F) {
	f.Add(amf.MustEncode("onMetaData", amf.ECMAArray{"width": 640.0}))
	f.Add(amf.MustEncode("onMetaData", "not an object"))
	f.Add([]byte{2, 0, 10, 'o', 'n', 'M', 'e', 't', 'a', 'D', 'a', 't', 'a', 8, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		out := withPublishID(b, "id")
		if len(out) > 2*len(b)+1024 {
			t.Fatalf("%d bytes from %d", len(out), len(b))
		}
	})
}

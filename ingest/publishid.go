package ingest

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/av"
	"github.com/relaymesh/relaymesh/packager"
)

// newPublishID returns a random id for one publishing session.
func newPublishID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// withPublishID adds the publishing session's id to an onMetaData payload
// (packager.PublishIDKey): relays pass the metadata on as it is, so every
// server that packages the stream as HLS/DASH names its files alike (see
// the packager). Other data messages, and metadata that does not decode as
// an object, are returned unchanged.
func withPublishID(payload []byte, id string) []byte {
	if av.DataName(payload) != "onMetaData" {
		return payload
	}
	_, n, err := amf.ReadValue(payload, amf.MaxDepth)
	if err != nil {
		return payload
	}
	v, _, err := amf.ReadValue(payload[n:], amf.MaxDepth)
	if err != nil {
		return payload
	}
	obj, ok := amf.Object(v)
	if !ok {
		return payload
	}
	props := make(amf.ECMAArray, len(obj)+1)
	for k, x := range obj {
		props[k] = x
	}
	props[packager.PublishIDKey] = id
	out, err := amf.Encode("onMetaData", props)
	if err != nil {
		return payload
	}
	return out
}

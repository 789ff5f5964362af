package packager

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/av"
)

// PublishIDKey is the onMetaData property that names a publishing session
// across the mesh: the primary's ingest adds it to the publisher's metadata
// (a random id per publish), relays pass the metadata on untouched, so every
// server that packages the stream sees the same value.
const PublishIDKey = "relaymeshPublish"

// maxPublishID bounds the publish id read from metadata (network input).
const maxPublishID = 64

// publishID reads PublishIDKey from an onMetaData payload ("" when absent
// or malformed).
func publishID(payload []byte) string {
	p := av.StripSetDataFrame(payload)
	if av.DataName(p) != "onMetaData" {
		return ""
	}
	_, n, err := amf.ReadValue(p, amf.MaxDepth)
	if err != nil {
		return ""
	}
	v, _, err := amf.ReadValue(p[n:], amf.MaxDepth)
	if err != nil {
		return ""
	}
	obj, ok := amf.Object(v)
	if !ok {
		return ""
	}
	id, _ := obj[PublishIDKey].(string)
	if len(id) > maxPublishID {
		return ""
	}
	return id
}

// sessionID names a session's files. Every server that packages the same
// stream derives the same id from what they all see alike: the stream's
// name, the publishing session's id (PublishIDKey, when the metadata
// carries one), the codec parameters, and salt (0 unless this server must
// not reuse the name, see segmenter.newSession). With the media times
// (which pass through the mesh unchanged) this gives every server the same
// file names, so a player moved to another server by content steering
// finds the segments it was about to ask for there.
func sessionID(key, publish string, vc *videoConfig, ac *audioConfig, salt int) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(publish))
	h.Write([]byte{0})
	h.Write(vcRaw(vc))
	h.Write([]byte{0})
	h.Write(acRaw(ac))
	if salt != 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(salt)))
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:4])
}

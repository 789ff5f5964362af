package hub

import (
	"math"

	"github.com/relaymesh/relaymesh/internal/amf"
	"github.com/relaymesh/relaymesh/internal/av"
)

// metadataVideoSize reads the width and height properties of an onMetaData
// message (plain or wrapped in @setDataFrame), with the bounded AMF0 reader:
// a hostile message costs at most its length.
func metadataVideoSize(payload []byte) (w, h int, ok bool) {
	p := av.StripSetDataFrame(payload)
	if av.DataName(p) != "onMetaData" {
		return 0, 0, false
	}
	_, n, err := amf.ReadValue(p, amf.MaxDepth) // the name
	if err != nil {
		return 0, 0, false
	}
	v, _, err := amf.ReadValue(p[n:], amf.MaxDepth)
	if err != nil {
		return 0, 0, false
	}
	obj, isObj := amf.Object(v)
	if !isObj {
		return 0, 0, false
	}
	width, _ := obj["width"].(float64)
	height, _ := obj["height"].(float64)
	if !(width >= 1 && width <= 1<<16 && height >= 1 && height <= 1<<16) || math.IsNaN(width) || math.IsNaN(height) {
		return 0, 0, false
	}
	return int(width), int(height), true
}

package hub

import (
	"encoding/binary"
	"math"

	"github.com/relaymesh/relaymesh/internal/av"
)

// AMF0 type markers needed to walk an onMetaData message.
const (
	amfNumber      = 0x00
	amfBoolean     = 0x01
	amfString      = 0x02
	amfObject      = 0x03
	amfNull        = 0x05
	amfUndefined   = 0x06
	amfReference   = 0x07
	amfECMAArray   = 0x08
	amfObjectEnd   = 0x09
	amfStrictArray = 0x0a
	amfDate        = 0x0b
	amfLongString  = 0x0c
	amfUnsupported = 0x0d
	amfXMLDocument = 0x0f
	amfTypedObject = 0x10
)

// amfMaxDepth bounds nesting when skipping values of a hostile message.
const amfMaxDepth = 16

// metadataVideoSize reads the width and height properties of an onMetaData
// message (plain or wrapped in @setDataFrame). It walks the AMF0 bytes
// without building values, so a hostile message costs at most its length.
func metadataVideoSize(payload []byte) (w, h int, ok bool) {
	p := av.StripSetDataFrame(payload)
	if av.DataName(p) != "onMetaData" {
		return 0, 0, false
	}
	p = p[3+len("onMetaData"):]
	if len(p) < 1 {
		return 0, 0, false
	}
	switch p[0] {
	case amfObject:
		p = p[1:]
	case amfECMAArray:
		if len(p) < 5 {
			return 0, 0, false
		}
		p = p[5:]
	default:
		return 0, 0, false
	}
	var width, height float64
	for {
		key, rest, good := amfKey(p)
		if !good {
			break
		}
		if key == "" && len(rest) > 0 && rest[0] == amfObjectEnd {
			break
		}
		if len(rest) >= 9 && rest[0] == amfNumber && (key == "width" || key == "height") {
			v := math.Float64frombits(binary.BigEndian.Uint64(rest[1:9]))
			if key == "width" {
				width = v
			} else {
				height = v
			}
		}
		p, good = amfSkip(rest, 0)
		if !good {
			break
		}
	}
	if width >= 1 && height >= 1 && width <= 1<<16 && height <= 1<<16 {
		return int(width), int(height), true
	}
	return 0, 0, false
}

// amfKey reads an object property name (u16 length, UTF-8, no marker).
func amfKey(p []byte) (string, []byte, bool) {
	if len(p) < 2 {
		return "", nil, false
	}
	n := int(binary.BigEndian.Uint16(p))
	if len(p) < 2+n {
		return "", nil, false
	}
	return string(p[2 : 2+n]), p[2+n:], true
}

// amfSkip skips one AMF0 value and returns what follows it.
func amfSkip(p []byte, depth int) ([]byte, bool) {
	if len(p) < 1 || depth > amfMaxDepth {
		return nil, false
	}
	t, p := p[0], p[1:]
	need := func(n int) ([]byte, bool) {
		if n < 0 || len(p) < n {
			return nil, false
		}
		return p[n:], true
	}
	switch t {
	case amfNumber:
		return need(8)
	case amfBoolean:
		return need(1)
	case amfString:
		if len(p) < 2 {
			return nil, false
		}
		return need(2 + int(binary.BigEndian.Uint16(p)))
	case amfLongString, amfXMLDocument:
		if len(p) < 4 {
			return nil, false
		}
		return need(4 + int(binary.BigEndian.Uint32(p)))
	case amfNull, amfUndefined, amfUnsupported:
		return p, true
	case amfReference:
		return need(2)
	case amfDate:
		return need(10)
	case amfTypedObject:
		_, rest, ok := amfKey(p) // class name
		if !ok {
			return nil, false
		}
		return amfSkipProps(rest, depth)
	case amfObject:
		return amfSkipProps(p, depth)
	case amfECMAArray:
		if len(p) < 4 {
			return nil, false
		}
		return amfSkipProps(p[4:], depth)
	case amfStrictArray:
		if len(p) < 4 {
			return nil, false
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		for i := uint32(0); i < n; i++ { // every value takes at least one byte
			var ok bool
			if p, ok = amfSkip(p, depth+1); !ok {
				return nil, false
			}
		}
		return p, true
	}
	return nil, false
}

// amfSkipProps skips object properties up to and including the end marker.
func amfSkipProps(p []byte, depth int) ([]byte, bool) {
	for {
		key, rest, ok := amfKey(p)
		if !ok {
			return nil, false
		}
		if key == "" && len(rest) > 0 && rest[0] == amfObjectEnd {
			return rest[1:], true
		}
		if p, ok = amfSkip(rest, depth+1); !ok {
			return nil, false
		}
	}
}

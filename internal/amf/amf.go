// Package amf decodes and encodes the AMF0 values of RTMP commands and data
// messages. The value codec is go-amf0's; this package adds what a server
// facing hostile peers needs in front of it: a structural check that bounds
// lengths, element counts and nesting against the bytes actually present, so
// that no declared size can make the decoder allocate more than the message
// holds or recurse without end.
package amf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	amf0 "github.com/yutopp/go-amf0"
)

// MaxDepth is how deeply objects and arrays may nest.
const MaxDepth = 32

// ErrMalformed wraps every structural error found by Validate.
var ErrMalformed = errors.New("malformed AMF0")

// Value markers (AMF0 specification, section 2.1).
const (
	markerNumber      = 0x00
	markerBoolean     = 0x01
	markerString      = 0x02
	markerObject      = 0x03
	markerNull        = 0x05
	markerUndefined   = 0x06
	markerReference   = 0x07
	markerECMAArray   = 0x08
	markerObjectEnd   = 0x09
	markerStrictArray = 0x0a
	markerDate        = 0x0b
	markerLongString  = 0x0c
	markerUnsupported = 0x0d
	markerXMLDocument = 0x0f
	markerTypedObject = 0x10
	markerAVMPlus     = 0x11
)

// Validate checks that b is a sequence of well-formed AMF0 values that the
// value decoder can read without trusting any declared size.
func Validate(b []byte) error {
	for len(b) > 0 {
		n, err := skipValue(b, 0)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// skipValue returns the encoded length of the value at the start of b.
func skipValue(b []byte, depth int) (int, error) {
	if depth > MaxDepth {
		return 0, malformed("nesting deeper than %d", MaxDepth)
	}
	if len(b) == 0 {
		return 0, malformed("truncated value")
	}
	switch b[0] {
	case markerNumber:
		return need(b, 9)
	case markerBoolean:
		return need(b, 2)
	case markerString, markerXMLDocument:
		if b[0] == markerXMLDocument {
			return longString(b)
		}
		return shortString(b, 1)
	case markerLongString:
		return longString(b)
	case markerNull, markerUndefined, markerUnsupported:
		return 1, nil
	case markerReference:
		return need(b, 3)
	case markerDate:
		return need(b, 11)
	case markerObject:
		n, err := skipProperties(b[1:], depth)
		return 1 + n, err
	case markerTypedObject:
		cn, err := shortString(b, 1)
		if err != nil {
			return 0, err
		}
		n, err := skipProperties(b[cn:], depth)
		return cn + n, err
	case markerECMAArray:
		if len(b) < 5 {
			return 0, malformed("truncated ECMA array")
		}
		n, err := skipProperties(b[5:], depth)
		return 5 + n, err
	case markerStrictArray:
		if len(b) < 5 {
			return 0, malformed("truncated strict array")
		}
		count := binary.BigEndian.Uint32(b[1:5])
		// Every element takes at least one byte: a count larger than the
		// bytes left is a lie.
		if uint64(count) > uint64(len(b)-5) {
			return 0, malformed("strict array of %d elements in %d bytes", count, len(b)-5)
		}
		off := 5
		for i := uint32(0); i < count; i++ {
			n, err := skipValue(b[off:], depth+1)
			if err != nil {
				return 0, err
			}
			off += n
		}
		return off, nil
	case markerAVMPlus:
		return 0, malformed("AMF3 values are not supported here")
	}
	return 0, malformed("unknown marker 0x%02x", b[0])
}

func need(b []byte, n int) (int, error) {
	if len(b) < n {
		return 0, malformed("truncated value (marker 0x%02x)", b[0])
	}
	return n, nil
}

// shortString measures a u16-length string starting at b[off:].
func shortString(b []byte, off int) (int, error) {
	if len(b) < off+2 {
		return 0, malformed("truncated string length")
	}
	n := off + 2 + int(binary.BigEndian.Uint16(b[off:]))
	if len(b) < n {
		return 0, malformed("string of %d bytes truncated", n-off-2)
	}
	return n, nil
}

func longString(b []byte) (int, error) {
	if len(b) < 5 {
		return 0, malformed("truncated long string length")
	}
	l := uint64(binary.BigEndian.Uint32(b[1:5]))
	if l > uint64(len(b)-5) {
		return 0, malformed("long string of %d bytes truncated", l)
	}
	return 5 + int(l), nil
}

// skipProperties measures key/value pairs up to and including the object end
// marker (an empty key followed by 0x09).
func skipProperties(b []byte, depth int) (int, error) {
	off := 0
	for {
		kn, err := shortString(b[off:], 0)
		if err != nil {
			return 0, err
		}
		if kn == 2 { // empty key
			if len(b) < off+3 {
				return 0, malformed("object without end marker")
			}
			if b[off+2] != markerObjectEnd {
				// Some encoders write an empty key with a value; accept it.
				vn, err := skipValue(b[off+2:], depth+1)
				if err != nil {
					return 0, err
				}
				off += 2 + vn
				continue
			}
			return off + 3, nil
		}
		off += kn
		vn, err := skipValue(b[off:], depth+1)
		if err != nil {
			return 0, err
		}
		off += vn
	}
}

// Decode validates b and decodes every value in it. Objects come back as
// map[string]any, ECMA arrays as amf0.ECMAArray, strict arrays as []any,
// numbers as float64, null and undefined as nil.
func Decode(b []byte) ([]any, error) {
	if err := Validate(b); err != nil {
		return nil, err
	}
	dec := amf0.NewDecoder(bytes.NewReader(b))
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		out = append(out, v)
	}
}

// Encode encodes values in order. Accepted value types are go-amf0's: numbers,
// strings, booleans, nil, maps with string keys (as objects), slices (as strict
// arrays), amf0.ECMAArray and time.Time.
func Encode(values ...any) ([]byte, error) {
	var buf bytes.Buffer
	enc := amf0.NewEncoder(&buf)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("amf0 encode %T: %w", v, err)
		}
	}
	return buf.Bytes(), nil
}

// MustEncode is Encode for values known to be encodable (built by the server
// itself); it panics on a programming error.
func MustEncode(values ...any) []byte {
	b, err := Encode(values...)
	if err != nil {
		panic(err)
	}
	return b
}

// ECMAArray is go-amf0's ECMA array type, re-exported for callers building
// onMetaData-style values.
type ECMAArray = amf0.ECMAArray

// Number reads v as a float64 (AMF0 numbers are doubles).
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case uint32:
		return float64(n), true
	}
	return math.NaN(), false
}

// Str reads v as a string.
func Str(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

// Object reads v as an object or ECMA array.
func Object(v any) (map[string]any, bool) {
	switch o := v.(type) {
	case map[string]any:
		return o, true
	case amf0.ECMAArray:
		return map[string]any(o), true
	}
	return nil, false
}

// Package amf decodes and encodes the AMF0 values of RTMP commands, data
// messages and shared objects, including AMF3 values behind AMF0's avmplus
// marker (sent by clients connected with objectEncoding 3). Decoding is the
// project's own bounded reader: every declared size is checked against the
// bytes actually present and nesting is limited, so hostile input can neither
// make it allocate more than the message holds nor recurse without end
// (go-amf0's decoder can be made to panic). AMF0 encoding uses go-amf0; the
// AMF3 encoder is this package's (amf3_encode.go).
package amf

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	amf0 "github.com/yutopp/go-amf0"
)

// MaxDepth is how deeply objects and arrays may nest.
const MaxDepth = 32

// ErrMalformed wraps every structural error in AMF0 or AMF3 input.
var ErrMalformed = errors.New("malformed AMF")

// Malformed returns an error wrapping ErrMalformed.
func Malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

func malformed(format string, args ...any) error { return Malformed(format, args...) }

// Decode decodes every value in b with the bounded reader (ReadValue).
// Objects come back as map[string]any, ECMA arrays as amf0.ECMAArray,
// strict arrays as []any, numbers as float64, null as nil and a top-level
// undefined as Undefined; AMF3 values decode to the same types (amf3.go).
func Decode(b []byte) ([]any, error) {
	var out []any
	for len(b) > 0 {
		v, n, err := ReadValue(b, MaxDepth)
		if err != nil {
			return out, err
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, nil
}

// Encode encodes values in order. Accepted value types are go-amf0's: numbers,
// strings, booleans, nil, maps with string keys (as objects), slices (as strict
// arrays), amf0.ECMAArray and time.Time. A value AMF0 cannot carry (one
// holding a []byte, or an object key over 65535 bytes) is written as AMF3
// after an avmplus marker, as Flash Media Server answers its clients.
func Encode(values ...any) ([]byte, error) {
	var buf bytes.Buffer
	enc := amf0.NewEncoder(&buf)
	for _, v := range values {
		if needsAMF3(v, 0) {
			b, err := AppendAVMPlus(nil, v)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
			continue
		}
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

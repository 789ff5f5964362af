package amf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	amf0 "github.com/yutopp/go-amf0"
)

// Undefined is the Go value of a top-level AMF0 undefined (marker 0x06).
// Nested inside an object or array, undefined decodes as nil, as go-amf0 has
// no value for it.
type Undefined struct{}

// ErrAMF3 is returned for AMF3 content that is well-formed but cannot be
// represented: an externalizable class other than the Flex collection
// wrappers (its body is private to the class), or a Dictionary keyed by
// objects. Callers outside this package also return it for an AMF3
// container whose encoding byte is not 0.
var ErrAMF3 = errors.New("unsupported AMF3 content")

const (
	mNumber      = 0x00
	mBoolean     = 0x01
	mString      = 0x02
	mObject      = 0x03
	mNull        = 0x05
	mUndefined   = 0x06
	mReference   = 0x07
	mECMAArray   = 0x08
	mObjectEnd   = 0x09
	mStrictArray = 0x0a
	mDate        = 0x0b
	mLongString  = 0x0c
	mAVMPlus     = 0x11

	// maxDateMillis bounds dates to what go-amf0's encoder can write (it
	// goes through time.UnixNano: years 1678 to 2262).
	maxDateMillis = 9.2e12
)

// ReadValue decodes the AMF0 value at the start of b and returns it with its
// encoded length. It trusts no declared size: every count and length is
// checked against the bytes present, and nesting is bounded by maxDepth.
// An avmplus marker (0x11) introduces one AMF3 value, at the top level or
// nested (see amf3.go for its Go types and limits).
//
// go-amf0 v0.1.1 is not used for decoding: it reuses one value across the
// properties of an ECMA array (nested objects merge, and a strict array inside
// one panics), reads date milliseconds as nanoseconds and cannot read
// undefined. The Go types produced are the ones its encoder writes back.
func ReadValue(b []byte, maxDepth int) (any, int, error) {
	return decodeValue(b, 0, maxDepth)
}

func decodeValue(b []byte, depth, maxDepth int) (any, int, error) {
	if depth > maxDepth {
		return nil, 0, malformed("values nested deeper than %d", maxDepth)
	}
	if len(b) == 0 {
		return nil, 0, malformed("truncated value")
	}
	switch b[0] {
	case mNumber:
		if len(b) < 9 {
			return nil, 0, malformed("truncated number")
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b[1:9])), 9, nil
	case mBoolean:
		if len(b) < 2 {
			return nil, 0, malformed("truncated boolean")
		}
		return b[1] != 0, 2, nil
	case mString:
		s, n, err := ReadString(b[1:])
		return s, 1 + n, err
	case mNull:
		return nil, 1, nil
	case mUndefined:
		if depth > 0 {
			return nil, 1, nil
		}
		return Undefined{}, 1, nil
	case mDate:
		if len(b) < 11 {
			return nil, 0, malformed("truncated date")
		}
		ms := math.Float64frombits(binary.BigEndian.Uint64(b[1:9]))
		if math.IsNaN(ms) || math.Abs(ms) > maxDateMillis || ms != math.Trunc(ms) {
			return nil, 0, malformed("date %v is not a whole number of milliseconds in range", ms)
		}
		// The time-zone field (b[9:11]) is reserved and ignored, as go-amf0 does.
		return time.UnixMilli(int64(ms)).UTC(), 11, nil
	case mObject:
		m := map[string]any{}
		n, err := decodeProperties(b[1:], depth, maxDepth, m)
		return m, 1 + n, err
	case mECMAArray:
		if len(b) < 5 {
			return nil, 0, malformed("truncated ECMA array")
		}
		m := amf0.ECMAArray{} // the declared count is a hint only; never trusted
		n, err := decodeProperties(b[5:], depth, maxDepth, m)
		return m, 5 + n, err
	case mStrictArray:
		if len(b) < 5 {
			return nil, 0, malformed("truncated strict array")
		}
		count := binary.BigEndian.Uint32(b[1:5])
		if uint64(count) > uint64(len(b)-5) { // every element takes at least a byte
			return nil, 0, malformed("strict array of %d elements in %d bytes", count, len(b)-5)
		}
		arr := make([]any, count)
		off := 5
		for i := range arr {
			v, n, err := decodeValue(b[off:], depth+1, maxDepth)
			if err != nil {
				return nil, 0, err
			}
			arr[i] = v
			off += n
		}
		return arr, off, nil
	case mAVMPlus:
		v, n, err := readAMF3(b[1:], depth, maxDepth)
		return v, 1 + n, err
	case mLongString:
		if len(b) < 5 {
			return nil, 0, malformed("truncated long string")
		}
		l := uint64(binary.BigEndian.Uint32(b[1:5]))
		if l > uint64(len(b)-5) {
			return nil, 0, malformed("long string of %d bytes truncated", l)
		}
		if !utf8.Valid(b[5 : 5+l]) {
			return nil, 0, malformed("string is not UTF-8")
		}
		return string(b[5 : 5+l]), 5 + int(l), nil
	case mReference:
		return nil, 0, malformed("AMF0 references not supported")
	}
	return nil, 0, malformed("unsupported AMF0 marker 0x%02x", b[0])
}

// ReadString reads a u16-length UTF-8 string (no marker) at the start of b.
func ReadString(b []byte) (string, int, error) {
	if len(b) < 2 {
		return "", 0, malformed("truncated string length")
	}
	n := 2 + int(binary.BigEndian.Uint16(b))
	if len(b) < n {
		return "", 0, malformed("string of %d bytes truncated", n-2)
	}
	if !utf8.Valid(b[2:n]) {
		return "", 0, malformed("string is not UTF-8")
	}
	return string(b[2:n]), n, nil
}

// decodeProperties reads key/value pairs into m up to and including the
// object end (an empty key and marker 0x09).
func decodeProperties(b []byte, depth, maxDepth int, m map[string]any) (int, error) {
	off := 0
	for {
		k, kn, err := ReadString(b[off:])
		if err != nil {
			return 0, err
		}
		off += kn
		if k == "" {
			if len(b) <= off || b[off] != mObjectEnd {
				return 0, malformed("object without end marker")
			}
			return off + 1, nil
		}
		v, vn, err := decodeValue(b[off:], depth+1, maxDepth)
		if err != nil {
			return 0, err
		}
		m[k] = v
		off += vn
	}
}

// appendWriter lets go-amf0's encoder append to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// AppendValue appends the AMF0 encoding of v to dst. Accepted Go types:
// nil, Undefined (top level only), bool, string (up to 65535 bytes), every
// integer and float type (written as a number), map[string]any,
// amf0.ECMAArray, []any and time.Time (whole milliseconds). A value that
// AMF0 cannot carry (it holds a []byte, or an object key over 65535 bytes)
// is written as AMF3 after an avmplus marker (see AppendAVMPlus).
func AppendValue(dst []byte, v any) ([]byte, error) {
	if needsAMF3(v, 0) {
		return AppendAVMPlus(dst, v)
	}
	if err := checkValue(v, 0); err != nil {
		return dst, err
	}
	switch v.(type) {
	case Undefined:
		return append(dst, mUndefined), nil
	case nil:
		return append(dst, mNull), nil
	}
	w := appendWriter{b: dst}
	if err := amf0.NewEncoder(&w).Encode(v); err != nil {
		return dst, fmt.Errorf("amf0 encode %T: %w", v, err)
	}
	return w.b, nil
}

const maxEncodeDepth = 64

func checkValue(v any, depth int) error {
	if depth > maxEncodeDepth {
		return fmt.Errorf("amf0: value nested deeper than %d", maxEncodeDepth)
	}
	switch x := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return nil
	case Undefined:
		if depth > 0 {
			return errors.New("amf0: Undefined is only supported as a top-level value")
		}
		return nil
	case string:
		return nil // go-amf0 writes strings over 65535 bytes as long strings
	case time.Time:
		if ms := x.UnixMilli(); ms > maxDateMillis || ms < -maxDateMillis {
			return fmt.Errorf("amf0: date %v outside the years 1678 to 2262", x)
		}
		if x.Nanosecond()%int(time.Millisecond) != 0 {
			return errors.New("amf0: date with sub-millisecond precision (truncate to milliseconds)")
		}
		return nil
	case map[string]any:
		return checkProps(x, depth)
	case amf0.ECMAArray:
		return checkProps(x, depth)
	case []any:
		for _, e := range x {
			if err := checkValue(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("amf0: unsupported value type %T", v)
}

func checkProps(m map[string]any, depth int) error {
	for k, e := range m {
		if k == "" || len(k) > math.MaxUint16 {
			return fmt.Errorf("amf0: object key of %d bytes", len(k))
		}
		if err := checkValue(e, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// DecodeValue decodes b, which must hold exactly one AMF0 value (which may
// be an avmplus-marked AMF3 value).
func DecodeValue(b []byte) (any, error) {
	v, n, err := ReadValue(b, MaxDepth)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, malformed("%d bytes after the value", len(b)-n)
	}
	return v, nil
}

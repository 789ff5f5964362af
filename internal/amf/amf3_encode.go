package amf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	amf0 "github.com/yutopp/go-amf0"
)

// AppendAMF3 appends the AMF3 encoding of v (without the AMF0 avmplus
// marker) to dst, with fresh reference tables. Accepted Go types:
//
//	nil                         null
//	Undefined                   undefined
//	bool                        false, true
//	integer and float types     integer when the value is whole and fits 29
//	                            signed bits (not -0), double otherwise
//	string                      string (up to 2^28-1 bytes)
//	time.Time                   Date (whole milliseconds, years 1678 to 2262)
//	[]byte                      ByteArray
//	[]any                       dense Array
//	amf0.ECMAArray              Array with only an associative part
//	map[string]any              anonymous dynamic Object
//
// Strings are always written inline, never by reference, so the output
// re-decodes within the reader's expansion budget; object keys are sorted,
// so equal values encode to equal bytes. Only the traits of the anonymous
// object are sent by reference after their first use. On error dst is
// returned unchanged.
func AppendAMF3(dst []byte, v any) ([]byte, error) {
	var e amf3Encoder
	out, err := e.value(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// AppendAVMPlus appends v as an AMF0 value that switches to AMF3: the
// avmplus marker 0x11 followed by AppendAMF3's encoding. This is how a
// server answers objectEncoding 3 clients with values AMF0 cannot carry
// (as Red5 does for every value of such a client).
func AppendAVMPlus(dst []byte, v any) ([]byte, error) {
	out, err := AppendAMF3(append(dst, mAVMPlus), v)
	if err != nil {
		return dst, err
	}
	return out, nil
}

type amf3Encoder struct {
	anonTraits bool // the anonymous dynamic traits are in the traits table (index 0)
}

func appendU29(dst []byte, v uint32) []byte {
	switch {
	case v < 0x80:
		return append(dst, byte(v))
	case v < 0x4000:
		return append(dst, byte(v>>7)|0x80, byte(v&0x7f))
	case v < 0x200000:
		return append(dst, byte(v>>14)|0x80, byte(v>>7)|0x80, byte(v&0x7f))
	}
	return append(dst, byte(v>>22)|0x80, byte(v>>15)|0x80, byte(v>>8)|0x80, byte(v))
}

// appendInline appends a U29 holding n with the inline flag (low bit 1).
func appendInline(dst []byte, n int) ([]byte, error) {
	if n < 0 || n > maxLen29 {
		return dst, fmt.Errorf("amf3: length %d does not fit 28 bits", n)
	}
	return appendU29(dst, uint32(n)<<1|1), nil
}

// appendStr appends a UTF-8-vr, always inline.
func appendStr(dst []byte, s string) ([]byte, error) {
	dst, err := appendInline(dst, len(s))
	return append(dst, s...), err
}

func appendInt(dst []byte, i int64) []byte {
	if i >= minInt29 && i <= maxInt29 {
		return appendU29(append(dst, m3Integer), uint32(i)&maxU29)
	}
	return appendDouble(dst, float64(i))
}

func appendDouble(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && f >= minInt29 && f <= maxInt29 && !(f == 0 && math.Signbit(f)) {
		return appendU29(append(dst, m3Integer), uint32(int32(f))&maxU29)
	}
	return binary.BigEndian.AppendUint64(append(dst, m3Double), math.Float64bits(f))
}

func (e *amf3Encoder) value(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxEncodeDepth {
		return dst, fmt.Errorf("amf3: value nested deeper than %d", maxEncodeDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, m3Null), nil
	case Undefined:
		return append(dst, m3Undefined), nil
	case bool:
		if x {
			return append(dst, m3True), nil
		}
		return append(dst, m3False), nil
	case float64:
		return appendDouble(dst, x), nil
	case float32:
		return appendDouble(dst, float64(x)), nil
	case int:
		return appendInt(dst, int64(x)), nil
	case int8:
		return appendInt(dst, int64(x)), nil
	case int16:
		return appendInt(dst, int64(x)), nil
	case int32:
		return appendInt(dst, int64(x)), nil
	case int64:
		return appendInt(dst, x), nil
	case uint:
		return appendUint(dst, uint64(x)), nil
	case uint8:
		return appendInt(dst, int64(x)), nil
	case uint16:
		return appendInt(dst, int64(x)), nil
	case uint32:
		return appendInt(dst, int64(x)), nil
	case uint64:
		return appendUint(dst, x), nil
	case string:
		return appendStr(append(dst, m3String), x)
	case time.Time:
		if err := checkDate(x); err != nil {
			return dst, err
		}
		dst = append(dst, m3Date, 0x01)
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(float64(x.UnixMilli()))), nil
	case []byte:
		dst, err := appendInline(append(dst, m3ByteArray), len(x))
		return append(dst, x...), err
	case []any:
		dst, err := appendInline(append(dst, m3Array), len(x))
		if err != nil {
			return dst, err
		}
		dst = append(dst, 0x01) // no associative part
		for _, el := range x {
			if dst, err = e.value(dst, el, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case amf0.ECMAArray:
		dst = append(dst, m3Array, 0x01) // no dense part
		dst, err := e.members(dst, x, depth)
		return append(dst, 0x01), err
	case map[string]any:
		dst = append(dst, m3Object)
		if e.anonTraits {
			dst = append(dst, 0x01) // traits reference 0: U29 (0<<2)|0b01
		} else {
			dst = append(dst, 0x0b, 0x01) // inline dynamic traits, no sealed members, class ""
			e.anonTraits = true
		}
		dst, err := e.members(dst, x, depth)
		return append(dst, 0x01), err
	}
	return dst, fmt.Errorf("amf3: unsupported value type %T", v)
}

func appendUint(dst []byte, u uint64) []byte {
	if u <= maxInt29 {
		return appendInt(dst, int64(u))
	}
	return binary.BigEndian.AppendUint64(append(dst, m3Double), math.Float64bits(float64(u)))
}

// members appends name/value pairs in key order (without the terminating
// empty name).
func (e *amf3Encoder) members(dst []byte, m map[string]any, depth int) ([]byte, error) {
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" {
			return dst, errors.New("amf3: empty object key (it would end the object)")
		}
		if dst, err = appendStr(dst, k); err != nil {
			return dst, err
		}
		if dst, err = e.value(dst, m[k], depth+1); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func checkDate(t time.Time) error {
	if ms := t.UnixMilli(); ms > maxDateMillis || ms < -maxDateMillis {
		return fmt.Errorf("amf: date %v outside the years 1678 to 2262", t)
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return errors.New("amf: date with sub-millisecond precision (truncate to milliseconds)")
	}
	return nil
}

// needsAMF3 reports whether v holds something AMF0 cannot carry: a []byte
// (ByteArray) or an object key longer than 65535 bytes. Such values are
// written after an avmplus marker, as Flash Media Server does: AMF0 where
// possible, AMF3 where not.
func needsAMF3(v any, depth int) bool {
	if depth > maxEncodeDepth {
		return false // the encoders report the depth
	}
	switch x := v.(type) {
	case []byte:
		return true
	case []any:
		for _, el := range x {
			if needsAMF3(el, depth+1) {
				return true
			}
		}
	case map[string]any:
		return propsNeedAMF3(x, depth)
	case amf0.ECMAArray:
		return propsNeedAMF3(x, depth)
	}
	return false
}

func propsNeedAMF3(m map[string]any, depth int) bool {
	for k, el := range m {
		if len(k) > math.MaxUint16 || needsAMF3(el, depth+1) {
			return true
		}
	}
	return false
}

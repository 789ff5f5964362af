package amf

import (
	"bytes"
	"math"
	"time"

	amf0 "github.com/yutopp/go-amf0"
)

// Equal reports whether two decoded values are equal as AMF values:
// numbers by value (NaN equals NaN, the sign of zero counts), dates by
// instant, byte arrays by content, objects, ECMA arrays and arrays element
// by element.
func Equal(a, b any) bool { return valueEqual(a, b) }

func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && mapEqual(x, y)
	case amf0.ECMAArray:
		y, ok := b.(amf0.ECMAArray)
		return ok && mapEqual(x, y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case bool, string, Undefined:
		return a == b
	}
	return false
}

func mapEqual(x, y map[string]any) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		w, ok := y[k]
		if !ok || !valueEqual(v, w) {
			return false
		}
	}
	return true
}

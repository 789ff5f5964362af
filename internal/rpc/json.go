package rpc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/relaymesh/relaymesh/internal/amf"
)

// MaxJSONDepth bounds the nesting of values converted between JSON and AMF0.
const MaxJSONDepth = 32

// ErrTooDeep is returned for values nested deeper than MaxJSONDepth.
var ErrTooDeep = errors.New("rpc: value nested too deeply")

// ToJSON converts an AMF0 value (as package amf decodes it) to a value that
// encoding/json writes faithfully: ECMA arrays become objects, dates RFC 3339
// strings, undefined null, and non-finite numbers null.
func ToJSON(v any) (any, error) { return toJSON(v, 0) }

func toJSON(v any, depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, ErrTooDeep
	}
	switch x := v.(type) {
	case nil, amf.Undefined:
		return nil, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, nil
		}
		return x, nil
	case bool, string:
		return x, nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case []byte: // an AMF3 ByteArray: base64, as encoding/json writes bytes
		return base64.StdEncoding.EncodeToString(x), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = toJSON(e, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if o, ok := amf.Object(v); ok {
		out := make(map[string]any, len(o))
		for k, e := range o {
			var err error
			if out[k], err = toJSON(e, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if n, ok := amf.Number(v); ok {
		return n, nil
	}
	return nil, fmt.Errorf("rpc: %T has no JSON form", v)
}

// ToJSONList converts a list of AMF0 values (call arguments).
func ToJSONList(vs []any) ([]any, error) {
	out := make([]any, len(vs))
	for i, v := range vs {
		var err error
		if out[i], err = toJSON(v, 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DecodeJSON reads one JSON value of at most max bytes from r and returns it
// as an AMF0-encodable value (objects map[string]any, arrays []any, numbers
// float64), refusing trailing data and nesting deeper than MaxJSONDepth.
func DecodeJSON(r io.Reader, max int64) (any, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("rpc: JSON body over %d bytes", max)
	}
	return ParseJSON(b)
}

// ParseJSON parses one JSON value (see DecodeJSON).
func ParseJSON(b []byte) (any, error) {
	if err := checkDepth(b); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("rpc: bad JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("rpc: bad JSON: trailing data")
	}
	return v, nil
}

// checkDepth refuses JSON nested deeper than MaxJSONDepth before decoding
// (brackets inside strings are skipped).
func checkDepth(b []byte) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			if depth++; depth > MaxJSONDepth {
				return ErrTooDeep
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

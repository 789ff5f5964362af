package sharedobject

import (
	"github.com/relaymesh/relaymesh/internal/amf"
)

// Undefined is the Go value of a top-level AMF0 undefined (marker 0x06).
// Nested inside an object or array, undefined decodes as nil.
type Undefined = amf.Undefined

// ErrAMF3 is returned for AMF3 content that cannot be represented: a type-16
// message whose encoding byte is not 0, or an AMF3 value amf.ErrAMF3 names
// (an unknown externalizable class, a Dictionary keyed by objects).
var ErrAMF3 = amf.ErrAMF3

// ErrMalformed wraps every structural decoding error.
var ErrMalformed = amf.ErrMalformed

const (
	mString  = 0x02
	mAVMPlus = 0x11 // AMF0's switch to one AMF3 value
)

func malformed(format string, args ...any) error { return amf.Malformed(format, args...) }

func readValue(b []byte, maxDepth int) (any, int, error) { return amf.ReadValue(b, maxDepth) }

func readString(b []byte) (string, int, error) { return amf.ReadString(b) }

// AppendValue appends the AMF0 encoding of v to dst (see amf.AppendValue).
func AppendValue(dst []byte, v any) ([]byte, error) { return amf.AppendValue(dst, v) }

// DecodeValue decodes b, which must hold exactly one AMF0 value (possibly
// an avmplus-marked AMF3 value).
func DecodeValue(b []byte) (any, error) { return amf.DecodeValue(b) }

// IsDelete reports whether v, as the value of a RequestChange, deletes the
// slot: ActionScript deletes a shared-object property set to null or
// undefined.
func IsDelete(v any) bool {
	switch v.(type) {
	case nil, Undefined:
		return true
	}
	return false
}

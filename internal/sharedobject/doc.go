// Package sharedobject is the wire model of RTMP shared objects: the
// Message and Event types, a bounded decoder and an encoder for the bodies of
// RTMP messages of type 19 (AMF0 shared object) and 16 (AMF3 container with
// AMF0 values), the versioned slot State that the primary's authority and the
// relays' replicas both keep, and the addressing types (ClientID, Outgoing)
// of the message-in/messages-out APIs built on it.
//
// Wire layout (Adobe RTMP 1.0 §7.1.3, as Red5 and Flash Player use it):
//
//	[type 16 only: encoding byte, 0 = AMF0]
//	name        u16 length + UTF-8 bytes (no AMF marker)
//	version     u32
//	flags       u32 (2 = persistent) + 4 reserved bytes
//	events      repeated: type u8, length u32, data[length]
//
// Event data by type:
//
//	Use (1), Release (2), Clear (8), UseSuccess (11): none
//	RequestChange (3): key (u16 string) + one AMF0 value
//	Change (4):        one or more key (u16 string) + AMF0 value pairs
//	Success (5), Remove (9), RequestRemove (10): key (u16 string)
//	SendMessage (6):   handler as an AMF0 string (with marker) + AMF0 args
//	Status (7):        code (u16 string) + level (u16 string)
//
// AMF0 values are written with go-amf0 and read by a small bounded reader of
// this package (go-amf0 v0.1.1's decoder mishandles values inside ECMA arrays,
// misreads dates and cannot read undefined) that checks every size and
// nesting level against the bytes present. The Go types of values are
// go-amf0's: float64, bool, string, nil (null),
// map[string]any (object), amf0.ECMAArray, []any (strict array) and
// time.Time (date), plus Undefined for a top-level AMF0 undefined.
package sharedobject

// Package sharedobject is the wire model of RTMP shared objects: the
// Message and Event types, a bounded decoder and an encoder for the bodies of
// RTMP messages of type 19 (AMF0 shared object) and 16 (sent by clients
// connected with objectEncoding 3), the versioned slot State that the primary's authority and the
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
//	RequestChange (3): key (u16 string) + one value
//	Change (4):        one or more key (u16 string) + value pairs
//	Success (5), Remove (9), RequestRemove (10): key (u16 string)
//	SendMessage (6):   handler as an AMF0 string (with marker) + args
//	Status (7):        code (u16 string) + level (u16 string)
//
// A value is an AMF0 value, which in either message type may be the avmplus
// marker 0x11 followed by one AMF3 value: that is how objectEncoding 3
// clients send theirs (a handler name sent that way is accepted too).
// Values are read by package amf's bounded reader (go-amf0 v0.1.1's decoder
// mishandles values inside ECMA arrays, misreads dates and cannot read
// undefined or AMF3), which checks every size, reference and nesting level
// against the bytes present. The Go types of values are go-amf0's: float64,
// bool, string, nil (null), map[string]any (object), amf0.ECMAArray, []any
// (strict array) and time.Time (date), plus Undefined for a top-level
// undefined and []byte for an AMF3 ByteArray (package amf lists how every
// AMF3 type maps to these).
//
// Values are written as AMF0 with go-amf0 in both message types, except
// those AMF0 cannot carry ([]byte, object keys over 65535 bytes), which go
// as avmplus-marked AMF3: Flash Media Server's "AMF0 where possible" rule,
// which Flash Player accepts whatever the object encoding. (Red5 instead
// writes every value of a type-16 message as AMF3.) A client connected with
// objectEncoding 0 that is sent such a value may not understand it; Flash
// Media Server disconnects those clients.
package sharedobject

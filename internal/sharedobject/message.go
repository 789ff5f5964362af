package sharedobject

import (
	"fmt"
	"strings"
)

// RTMP message type ids that carry shared-object messages.
const (
	MessageTypeAMF0 = 19 // shared object, AMF0
	MessageTypeAMF3 = 16 // shared object of an objectEncoding 3 client (encoding byte, then as type 19)
)

// EventType is the type byte of a shared-object event.
type EventType uint8

// The eleven event types of RTMP 1.0 §7.1.3.
const (
	EventUse           EventType = 1  // client → server: subscribe to the object
	EventRelease       EventType = 2  // client → server: unsubscribe
	EventRequestChange EventType = 3  // client → server: set a slot
	EventChange        EventType = 4  // server → clients: a slot has a new value
	EventSuccess       EventType = 5  // server → requester: its change was applied
	EventSendMessage   EventType = 6  // client → server → every client: call a handler
	EventStatus        EventType = 7  // server → client: an error or notice
	EventClear         EventType = 8  // server → client: drop the local copy
	EventRemove        EventType = 9  // server → clients: a slot was deleted
	EventRequestRemove EventType = 10 // client → server: delete a slot
	EventUseSuccess    EventType = 11 // server → client: the use was accepted
)

var eventNames = [...]string{
	EventUse: "use", EventRelease: "release", EventRequestChange: "request-change",
	EventChange: "change", EventSuccess: "success", EventSendMessage: "send-message",
	EventStatus: "status", EventClear: "clear", EventRemove: "remove",
	EventRequestRemove: "request-remove", EventUseSuccess: "use-success",
}

func (t EventType) String() string {
	if t.Valid() {
		return eventNames[t]
	}
	return fmt.Sprintf("event(%d)", uint8(t))
}

// Valid reports whether t is one of the eleven defined event types.
func (t EventType) Valid() bool { return t >= EventUse && t <= EventUseSuccess }

// Message is one shared-object message: the events of one RTMP message of
// type 19 or 16 for the object Name.
type Message struct {
	Name       string // object name, e.g. "chat"
	Version    uint32 // the object's version (server → client); clients send what they last saw
	Persistent bool   // the persistence flag (wire value 2)
	Events     []Event
}

// Event is one shared-object event. Which fields are meaningful depends on
// Type:
//
//	RequestChange, Change:         Key, Value
//	Success, Remove, RequestRemove: Key
//	SendMessage:                   Handler, Args
//	Status:                        Code, Level
//	Use, Release, Clear, UseSuccess: none
//
// A Change event on the wire may carry several key/value pairs; Decode
// splits it into one Change event per pair, in wire order, and the encoder
// writes one pair per Change event.
type Event struct {
	Type    EventType
	Key     string // slot name
	Value   any    // slot value (AMF0 or AMF3, see the package documentation)
	Handler string // SendMessage: the handler's name
	Args    []any  // SendMessage: the handler's arguments
	Code    string // Status: e.g. "SharedObject.NoWriteAccess"
	Level   string // Status: "error", "warning" or "status"
}

// Status codes sent in Status events.
const (
	StatusNoWriteAccess   = "SharedObject.NoWriteAccess"        // a write rule or hook refused the change
	StatusBadPersistence  = "SharedObject.BadPersistence"       // the use's persistence flag differs from the object's
	StatusCreationFailed  = "SharedObject.ObjectCreationFailed" // bad name or too many objects
	StatusLimitExceeded   = "SharedObject.LimitExceeded"        // slots, value size or message rate over a limit
	StatusUpstreamFailure = "SharedObject.UpstreamFailure"      // a relay lost its upstream before the answer
	LevelError            = "error"
)

// StatusEvent returns a Status event with level "error".
func StatusEvent(code string) Event { return Event{Type: EventStatus, Code: code, Level: LevelError} }

// ClientID names one connection (a viewer, a publisher, or a downstream
// relay) in the message-in/messages-out APIs.
type ClientID uint64

// Outgoing is a message for one client. Entries produced by one call that
// share the same *Message carry identical content: encode it once and send
// the bytes to every such client. Receivers must not modify the Message.
type Outgoing struct {
	Client  ClientID
	Message *Message
}

// Summary lists the message's events as "Type[:key][:code]", space
// separated ("Change:score Success:score"), for logs and tests.
func (m *Message) Summary() string {
	var b strings.Builder
	for i, e := range m.Events {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Type.String())
		if e.Key != "" {
			b.WriteString(":" + e.Key)
		}
		if e.Code != "" {
			b.WriteString(":" + e.Code)
		}
	}
	return b.String()
}

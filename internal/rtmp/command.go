package rtmp

import (
	"fmt"

	"github.com/relaymesh/relaymesh/internal/amf"
)

// Command is a decoded command message: name, transaction id, command
// object, arguments. Type 20 carries AMF0 values; type 17, sent by clients
// connected with objectEncoding 3, carries one format byte and then AMF0
// values of which any may be an avmplus-marked AMF3 value. Both decode to
// the same Go types (package amf), so handlers need not tell them apart.
type Command struct {
	StreamID      uint32
	Name          string
	TransactionID float64
	Object        map[string]any // nil when the command object is null
	Args          []any
}

// ParseCommand decodes a command message.
func ParseCommand(m Message) (*Command, error) {
	p := m.Payload
	if m.Type == TypeCommandAMF3 {
		if len(p) < 1 {
			return nil, protocolErr("empty AMF3 command")
		}
		p = p[1:] // format selector; the body is AMF0 with AMF3 values behind avmplus markers
	}
	vs, err := amf.Decode(p)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	if len(vs) < 1 {
		return nil, protocolErr("empty command")
	}
	name, ok := vs[0].(string)
	if !ok {
		return nil, protocolErr("command name is %T, not a string", vs[0])
	}
	c := &Command{StreamID: m.StreamID, Name: name}
	if len(vs) > 1 {
		c.TransactionID, _ = amf.Number(vs[1])
	}
	if len(vs) > 2 {
		c.Object, _ = amf.Object(vs[2])
	}
	if len(vs) > 3 {
		c.Args = vs[3:]
	}
	return c, nil
}

// Arg returns argument i as a string ("" when absent or not a string).
func (c *Command) Arg(i int) string {
	if i < len(c.Args) {
		s, _ := c.Args[i].(string)
		return s
	}
	return ""
}

// CommandMessage encodes values as an AMF0 command on a message stream.
// Values AMF0 cannot carry ([]byte) go as avmplus-marked AMF3 (amf.Encode):
// a type-20 answer with AMF3 values where needed is what Red5 and Flash
// Media Server send objectEncoding 3 clients, even for type-17 calls.
func CommandMessage(streamID uint32, values ...any) (Message, error) {
	p, err := amf.Encode(values...)
	if err != nil {
		return Message{}, err
	}
	return Message{Type: TypeCommandAMF0, StreamID: streamID, Payload: p}, nil
}

// DataMessage encodes values as an AMF0 data message on a message stream.
func DataMessage(streamID uint32, values ...any) Message {
	return Message{Type: TypeDataAMF0, StreamID: streamID, Payload: amf.MustEncode(values...)}
}

// Status is the info object of an onStatus command.
type Status struct {
	Level       string // "status", "warning" or "error"
	Code        string // e.g. NetStream.Play.Start
	Description string
}

// Error lets a Status travel as an error to where it is sent.
func (s Status) Error() string { return s.Code + ": " + s.Description }

// StatusMessage builds onStatus(0, null, {level, code, description}) on a stream.
func StatusMessage(streamID uint32, s Status) Message {
	return Message{Type: TypeCommandAMF0, StreamID: streamID, Payload: amf.MustEncode(
		"onStatus", 0.0, nil, map[string]any{"level": s.Level, "code": s.Code, "description": s.Description})}
}

// Status codes relaymesh sends.
const (
	CodeConnectSuccess  = "NetConnection.Connect.Success"
	CodeConnectRejected = "NetConnection.Connect.Rejected"
	CodeConnectClosed   = "NetConnection.Connect.Closed"
	// CodeReconnectRequest asks a client to reconnect, to its tcUrl when
	// given (Enhanced RTMP v2); sent only to clients that announce it.
	CodeReconnectRequest    = "NetConnection.Connect.ReconnectRequest"
	CodePublishStart        = "NetStream.Publish.Start"
	CodePublishBadName      = "NetStream.Publish.BadName"
	CodePublishUnauthorized = "NetStream.Publish.Unauthorized"
	CodeUnpublishSuccess    = "NetStream.Unpublish.Success"
	CodePlayReset           = "NetStream.Play.Reset"
	CodePlayStart           = "NetStream.Play.Start"
	CodePlayStop            = "NetStream.Play.Stop"
	CodePlayStreamNotFound  = "NetStream.Play.StreamNotFound"
	CodePlayFailed          = "NetStream.Play.Failed"
	CodePlayInsufficientBW  = "NetStream.Play.InsufficientBW"
	CodePlayUnpublishNotify = "NetStream.Play.UnpublishNotify"
	CodePlayPublishNotify   = "NetStream.Play.PublishNotify"
	CodeFailed              = "NetStream.Failed"
)

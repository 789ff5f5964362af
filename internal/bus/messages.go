package bus

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/internal/audience"
)

// MaxMessageSize bounds every encoded message accepted by a decoder.
const MaxMessageSize = 256 << 10

// Bounds on the lists inside messages.
const (
	MaxStreamsPerStatus = 1024 // streams one Status may list
	MaxDemandEvents     = 1024 // events in one Demand batch
	MaxRelaysPerStream  = 1024 // relays in one Placement
	MaxBonusCells       = 1024 // locations in one Bonuses
	MaxFieldLen         = 512  // any string field (addresses, reasons, URLs)
	MaxProtocols        = 8    // entries of one StreamStatus.Protocols
)

// Protocols of a viewer in StreamStatus.Protocols.
const (
	ProtoRTMP = audience.RTMP
	ProtoHLS  = audience.HLS
	ProtoDASH = audience.DASH
)

// ErrInvalid wraps every decoding and validation error.
var ErrInvalid = errors.New("bus: invalid message")

// StreamStatus is the load of one stream on a relay. Viewers and Mbps are
// the totals over every protocol (RTMP players and HLS/DASH clients), so
// the scaler, the demand bonus and the close rules count them all;
// Protocols breaks them down.
type StreamStatus struct {
	App     string  `json:"app"`
	Name    string  `json:"name"`
	Viewers int     `json:"viewers"`
	Mbps    float64 `json:"mbps"`
	Live    bool    `json:"live"` // media is flowing
	// HTTPReady: the server's packager has segments of the stream, so an
	// HLS or DASH player sent here plays at once (the redirector steers
	// players to such servers first).
	HTTPReady bool           `json:"http_ready,omitempty"`
	Held      bool           `json:"held,omitempty"`      // kept open by an orchestrator command
	Protocols []ProtocolLoad `json:"protocols,omitempty"` // by protocol, when any has viewers
	// What the server's hub knows of the live stream (for the dashboard).
	VideoCodec  string `json:"video_codec,omitempty"` // "h264", "hevc", …
	AudioCodec  string `json:"audio_codec,omitempty"` // "aac", "mp3", …
	Width       int    `json:"width,omitempty"`
	Height      int    `json:"height,omitempty"`
	BitrateKbps int    `json:"bitrate_kbps,omitempty"` // ingest, over the last seconds of media time
}

// ProtocolLoad is the share of one protocol in a StreamStatus.
type ProtocolLoad = audience.Load

// HTTPViewers is the number of HLS and DASH viewers in s.
func (s StreamStatus) HTTPViewers() int {
	n := 0
	for _, p := range s.Protocols {
		if p.Protocol == ProtoHLS || p.Protocol == ProtoDASH {
			n += p.Viewers
		}
	}
	return n
}

// Status is what a relay reports every interval (subject StatusSubject and
// bucket BucketRelays, key = ID).
type Status struct {
	ID              string         `json:"id"`
	Location        string         `json:"location,omitempty"`
	RTMP            string         `json:"rtmp,omitempty"` // host:port viewers play from
	HTTP            string         `json:"http,omitempty"` // host:port for HLS/DASH
	CapacityViewers int            `json:"cap_viewers,omitempty"`
	CapacityMbps    float64        `json:"cap_mbps,omitempty"`
	Viewers         int            `json:"viewers"`
	Mbps            float64        `json:"mbps"`
	Draining        bool           `json:"draining,omitempty"`
	Streams         []StreamStatus `json:"streams,omitempty"`
	Time            time.Time      `json:"time"`

	// RTMPS and HTTPS are the host:port of the TLS listeners, if any.
	RTMPS string `json:"rtmps,omitempty"`
	HTTPS string `json:"https,omitempty"`
}

// Command operations.
const (
	OpOpen    = "open"    // pull App/Name from Parent and keep it while held
	OpDrain   = "drain"   // stop taking new viewers (Name empty: the whole relay)
	OpUndrain = "undrain" // take viewers again
	OpClose   = "close"   // release App/Name now
)

// Command is a request from the orchestrator to one relay (subject
// CommandSubject); the relay answers with a Reply.
type Command struct {
	Op     string `json:"op"`
	App    string `json:"app,omitempty"`
	Name   string `json:"name,omitempty"`
	Parent string `json:"parent,omitempty"` // rtmp://host:port to pull from (open)
	Reason string `json:"reason,omitempty"`
}

// Reply answers a Command.
type Reply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// DemandEvent is N viewer requests for stream App/Name from location
// Vertex, whose nearest carrier was Nearest away (graph distance; a
// negative value means none was reachable).
type DemandEvent struct {
	App     string  `json:"app"`
	Name    string  `json:"name"`
	Vertex  string  `json:"vertex"`
	Nearest float64 `json:"nearest"`
	N       int     `json:"n"`
	// Full is how many of the N requests no server could take (answered
	// "retry later"): viewers waiting, which the controller counts in the
	// stream's audience.
	Full int `json:"full,omitempty"`
}

// Demand is a batch of requests seen by one redirector (DemandSubject).
type Demand struct {
	From   string        `json:"from,omitempty"`
	Events []DemandEvent `json:"events"`
}

// Stream event kinds.
const (
	EventPublish   = "publish"
	EventUnpublish = "unpublish"
)

// StreamEvent says a stream started or stopped on the primary.
type StreamEvent struct {
	App   string    `json:"app"`
	Name  string    `json:"name"`
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
}

// Relay states in a Placement.
const (
	StateOpening  = "opening"
	StateReady    = "ready"
	StateDraining = "draining"
)

// PlacedRelay is one relay of a stream.
type PlacedRelay struct {
	Server string    `json:"server"`
	Parent string    `json:"parent,omitempty"` // server id it pulls from
	State  string    `json:"state"`
	Since  time.Time `json:"since"`
}

// Placement lists the relays of one stream (bucket BucketPlacements).
type Placement struct {
	App    string        `json:"app"`
	Name   string        `json:"name"`
	Relays []PlacedRelay `json:"relays"`
}

// Bonuses are the demand bonuses of one stream (bucket BucketDemand, key
// StreamKey): what the leading orchestrator had gathered towards opening
// relays, for the next leader to go on from.
type Bonuses struct {
	App   string       `json:"app"`
	Name  string       `json:"name"`
	Cells []BonusValue `json:"cells"`
}

// BonusValue is the bonus at one location, as of At (it decays from there).
type BonusValue struct {
	Location string    `json:"location"`
	Value    float64   `json:"value"`
	At       time.Time `json:"at"`
}

// Lease is the leader's claim (bucket BucketLeader, key LeaderKey).
type Lease struct {
	Holder string    `json:"holder"`
	Since  time.Time `json:"since"`
}

// Encode marshals a message as compact JSON.
func Encode(v any) ([]byte, error) { return json.Marshal(v) }

// decode reads exactly one JSON object of at most MaxMessageSize bytes.
// Fields it does not know are ignored, so that a newer relay, orchestrator
// or redirector can add fields without breaking older ones in the same mesh
// (see the package doc's compatibility rule).
func decode(data []byte, v any) error {
	if len(data) > MaxMessageSize {
		return fmt.Errorf("%w: %d bytes exceeds %d", ErrInvalid, len(data), MaxMessageSize)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if d.More() {
		return fmt.Errorf("%w: trailing data", ErrInvalid)
	}
	return nil
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

func checkField(name, s string) error {
	if len(s) > MaxFieldLen {
		return invalid("%s too long (%d bytes)", name, len(s))
	}
	return nil
}

func checkName(what, s string) error {
	if s == "" || len(s) > MaxTokenLen || strings.ContainsAny(s, "/\x00") {
		return invalid("%s %q: want 1 to %d bytes without '/'", what, s, MaxTokenLen)
	}
	return nil
}

func checkNum(name string, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return invalid("%s %v", name, f)
	}
	return nil
}

// DecodeStatus decodes and validates a Status.
func DecodeStatus(data []byte) (Status, error) {
	var s Status
	if err := decode(data, &s); err != nil {
		return Status{}, err
	}
	if err := ValidToken(s.ID); err != nil {
		return Status{}, invalid("id: %v", err)
	}
	for _, f := range [...][2]string{{"location", s.Location}, {"rtmp", s.RTMP}, {"http", s.HTTP}} {
		if err := checkField(f[0], f[1]); err != nil {
			return Status{}, err
		}
	}
	if s.Viewers < 0 || s.CapacityViewers < 0 || len(s.Streams) > MaxStreamsPerStatus {
		return Status{}, invalid("status counts out of range")
	}
	if err := errors.Join(checkNum("mbps", s.Mbps), checkNum("cap_mbps", s.CapacityMbps)); err != nil {
		return Status{}, err
	}
	for _, st := range s.Streams {
		if err := errors.Join(checkName("app", st.App), checkName("name", st.Name), checkNum("mbps", st.Mbps)); err != nil {
			return Status{}, err
		}
		if st.Viewers < 0 {
			return Status{}, invalid("negative viewers")
		}
		if len(st.Protocols) > MaxProtocols {
			return Status{}, invalid("%d protocols", len(st.Protocols))
		}
		for _, p := range st.Protocols {
			if p.Viewers < 0 || len(p.Protocol) > 16 {
				return Status{}, invalid("protocol %.16q: %d viewers", p.Protocol, p.Viewers)
			}
			if err := checkNum("protocol mbps", p.Mbps); err != nil {
				return Status{}, err
			}
		}
	}
	return s, nil
}

// DecodeCommand decodes and validates a Command.
func DecodeCommand(data []byte) (Command, error) {
	var c Command
	if err := decode(data, &c); err != nil {
		return Command{}, err
	}
	switch c.Op {
	case OpOpen, OpClose:
		if err := errors.Join(checkName("app", c.App), checkName("name", c.Name)); err != nil {
			return Command{}, err
		}
	case OpDrain, OpUndrain:
		if c.App != "" || c.Name != "" {
			if err := errors.Join(checkName("app", c.App), checkName("name", c.Name)); err != nil {
				return Command{}, err
			}
		}
	default:
		return Command{}, invalid("unknown op %q", c.Op)
	}
	if err := errors.Join(checkField("parent", c.Parent), checkField("reason", c.Reason)); err != nil {
		return Command{}, err
	}
	return c, nil
}

// DecodeReply decodes a Reply.
func DecodeReply(data []byte) (Reply, error) {
	var r Reply
	if err := decode(data, &r); err != nil {
		return Reply{}, err
	}
	return r, checkField("error", r.Error)
}

// DecodeDemand decodes and validates a Demand batch.
func DecodeDemand(data []byte) (Demand, error) {
	var d Demand
	if err := decode(data, &d); err != nil {
		return Demand{}, err
	}
	if len(d.Events) > MaxDemandEvents {
		return Demand{}, invalid("%d events exceeds %d", len(d.Events), MaxDemandEvents)
	}
	if err := checkField("from", d.From); err != nil {
		return Demand{}, err
	}
	for _, e := range d.Events {
		if err := errors.Join(checkName("app", e.App), checkName("name", e.Name), checkField("vertex", e.Vertex)); err != nil {
			return Demand{}, err
		}
		if e.N < 1 || e.N > 1<<20 || math.IsNaN(e.Nearest) {
			return Demand{}, invalid("event n=%d nearest=%v", e.N, e.Nearest)
		}
	}
	return d, nil
}

// DecodeStreamEvent decodes and validates a StreamEvent.
func DecodeStreamEvent(data []byte) (StreamEvent, error) {
	var e StreamEvent
	if err := decode(data, &e); err != nil {
		return StreamEvent{}, err
	}
	if err := errors.Join(checkName("app", e.App), checkName("name", e.Name)); err != nil {
		return StreamEvent{}, err
	}
	if e.Event != EventPublish && e.Event != EventUnpublish {
		return StreamEvent{}, invalid("unknown event %q", e.Event)
	}
	return e, nil
}

// DecodePlacement decodes and validates a Placement.
func DecodePlacement(data []byte) (Placement, error) {
	var p Placement
	if err := decode(data, &p); err != nil {
		return Placement{}, err
	}
	if err := errors.Join(checkName("app", p.App), checkName("name", p.Name)); err != nil {
		return Placement{}, err
	}
	if len(p.Relays) > MaxRelaysPerStream {
		return Placement{}, invalid("%d relays", len(p.Relays))
	}
	for _, r := range p.Relays {
		if err := ValidToken(r.Server); err != nil {
			return Placement{}, invalid("server: %v", err)
		}
		if r.Parent != "" {
			if err := ValidToken(r.Parent); err != nil {
				return Placement{}, invalid("parent: %v", err)
			}
		}
		switch r.State {
		case StateOpening, StateReady, StateDraining:
		default:
			return Placement{}, invalid("state %q", r.State)
		}
	}
	return p, nil
}

// DecodeBonuses decodes and checks Bonuses.
func DecodeBonuses(data []byte) (Bonuses, error) {
	var b Bonuses
	if err := decode(data, &b); err != nil {
		return Bonuses{}, err
	}
	if err := errors.Join(checkName("app", b.App), checkName("name", b.Name)); err != nil {
		return Bonuses{}, err
	}
	if len(b.Cells) > MaxBonusCells {
		return Bonuses{}, invalid("%d bonus cells", len(b.Cells))
	}
	for _, c := range b.Cells {
		if err := ValidToken(c.Location); err != nil {
			return Bonuses{}, invalid("location: %v", err)
		}
		if !(c.Value >= 0) || math.IsInf(c.Value, 0) {
			return Bonuses{}, invalid("bonus %v", c.Value)
		}
	}
	return b, nil
}

// DecodeLease decodes a Lease.
func DecodeLease(data []byte) (Lease, error) {
	var l Lease
	if err := decode(data, &l); err != nil {
		return Lease{}, err
	}
	return l, checkField("holder", l.Holder)
}

// StreamKey is the key of stream app/name in BucketPlacements: the
// unpadded URL-safe base64 of "app/name", which any stream name can take.
func StreamKey(app, name string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(app + "/" + name))
}

// ParseStreamKey reverses StreamKey.
func ParseStreamKey(key string) (app, name string, err error) {
	if len(key) > 2*MaxTokenLen*4/3+4 {
		return "", "", invalid("key too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return "", "", invalid("key: %v", err)
	}
	app, name, ok := strings.Cut(string(b), "/")
	if !ok || checkName("app", app) != nil || checkName("name", name) != nil {
		return "", "", invalid("key %q", key)
	}
	return app, name, nil
}

package bus

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestSubjects(t *testing.T) {
	s, err := StatusSubject("relay-eu")
	if err != nil || s != "relaymesh.v1.relay.relay-eu.status" {
		t.Fatalf("status subject %q %v", s, err)
	}
	c, _ := CommandSubject("r1")
	if c != "relaymesh.v1.relay.r1.cmd" {
		t.Fatalf("cmd subject %q", c)
	}
	e, _ := StreamEventSubject("live", "show")
	if e != "relaymesh.v1.stream.live.show.event" {
		t.Fatalf("event subject %q", e)
	}
	for _, bad := range []string{"", "a.b", "a*", ">", "a b", strings.Repeat("x", MaxTokenLen+1), "é"} {
		if _, err := StatusSubject(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("StatusSubject(%q) = %v, want ErrBadToken", bad, err)
		}
	}
}

func TestRoundTrips(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	st := Status{ID: "relay-eu", Location: "eu", RTMP: "127.0.0.1:1936", HTTP: "127.0.0.1:8081",
		CapacityViewers: 100, CapacityMbps: 500, Viewers: 3, Mbps: 4.5, Time: now,
		Streams: []StreamStatus{{App: "live", Name: "a", Viewers: 3, Mbps: 4.5, Live: true, Held: true}}}
	data, _ := Encode(st)
	got, err := DecodeStatus(data)
	if err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("status: %v\n%+v\n%+v", err, got, st)
	}
	cmd := Command{Op: OpOpen, App: "live", Name: "a", Parent: "rtmp://127.0.0.1:1935", Reason: "demand"}
	data, _ = Encode(cmd)
	if c, err := DecodeCommand(data); err != nil || c != cmd {
		t.Fatalf("command: %v %+v", err, c)
	}
	d := Demand{From: "r1", Events: []DemandEvent{{App: "live", Name: "a", Vertex: "DE", Nearest: 2.5, N: 7}}}
	data, _ = Encode(d)
	if g, err := DecodeDemand(data); err != nil || !reflect.DeepEqual(g, d) {
		t.Fatalf("demand: %v %+v", err, g)
	}
	p := Placement{App: "live", Name: "a", Relays: []PlacedRelay{{Server: "relay-eu", Parent: "primary", State: StateReady, Since: now}}}
	data, _ = Encode(p)
	if g, err := DecodePlacement(data); err != nil || !reflect.DeepEqual(g, p) {
		t.Fatalf("placement: %v %+v", err, g)
	}
	ev := StreamEvent{App: "live", Name: "a", Event: EventPublish, Time: now}
	data, _ = Encode(ev)
	if g, err := DecodeStreamEvent(data); err != nil || g != ev {
		t.Fatalf("event: %v %+v", err, g)
	}
	app, name, err := ParseStreamKey(StreamKey("live", "a.b c"))
	if err != nil || app != "live" || name != "a.b c" {
		t.Fatalf("stream key: %q %q %v", app, name, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, in := range []string{
		``, `{}`, `[]`, `{"op":"explode"}`, `{"op":"open","app":"live"}`,
		`{"op":"close","app":"a","name":"b"} {}`, `{"op":"open","app":"a/b","name":"c"}`,
		`{"op":"open","app":"a","name":"b","parent":"` + strings.Repeat("p", MaxFieldLen+1) + `"}`,
	} {
		if _, err := DecodeCommand([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("DecodeCommand(%.40q) = %v", in, err)
		}
	}
	if _, err := DecodeStatus([]byte(`{"id":"a.b","viewers":1}`)); err == nil {
		t.Error("status with dotted id accepted")
	}
	if _, err := DecodeDemand([]byte(`{"events":[{"app":"a","name":"b","vertex":"x","n":0}]}`)); err == nil {
		t.Error("demand with n=0 accepted")
	}
	if _, err := DecodeStatus(make([]byte, MaxMessageSize+1)); err == nil {
		t.Error("oversized status accepted")
	}
}

// A newer release may add fields (the compatibility rule of the package
// doc): every decoder ignores what it does not know and keeps what it does.
func TestDecodeIgnoresNewFields(t *testing.T) {
	st, err := DecodeStatus([]byte(`{"id":"r1","viewers":3,"from_a_newer_release":{"x":[1,2]},"streams":[{"app":"live","name":"cam","viewers":3,"future":true}]}`))
	if err != nil || st.ID != "r1" || st.Viewers != 3 || len(st.Streams) != 1 || st.Streams[0].Viewers != 3 {
		t.Errorf("status: %+v, %v", st, err)
	}
	cmd, err := DecodeCommand([]byte(`{"op":"open","app":"a","name":"b","x":1}`))
	if err != nil || cmd.App != "a" || cmd.Name != "b" {
		t.Errorf("command: %+v, %v", cmd, err)
	}
	a, err := DecodeAlive([]byte(`{"id":"r1","new":"field"}`))
	if err != nil || a.ID != "r1" {
		t.Errorf("heartbeat: %+v, %v", a, err)
	}
	if _, err := DecodeLease([]byte(`{"holder":"o1","since":"2026-01-02T03:04:05Z","term":7}`)); err != nil {
		t.Errorf("lease: %v", err)
	}
	// What is known is still checked.
	if _, err := DecodeStatus([]byte(`{"id":"a.b","viewers":1,"new":1}`)); err == nil {
		t.Error("status with a dotted id accepted because of a new field")
	}
}

// startBus runs an embedded server for one test and connects to it.
func startBus(t *testing.T) (*Embedded, *Conn) {
	t.Helper()
	e, err := StartEmbedded(EmbeddedConfig{StoreDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	c, err := Connect(Options{InProcess: e.Server(), Name: t.Name()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return e, c
}

func TestEmbeddedRequestAndKV(t *testing.T) {
	_, c := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	subj, _ := CommandSubject("r1")
	sub, err := c.NC.Subscribe(subj, func(m *nats.Msg) {
		cmd, err := DecodeCommand(m.Data)
		rep := Reply{OK: err == nil && cmd.Op == OpClose}
		if !rep.OK {
			rep.Error = "only close"
		}
		data, _ := Encode(rep)
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if _, err := c.Request(ctx, "r1", Command{Op: OpClose, App: "live", Name: "a"}); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := c.Request(ctx, "r1", Command{Op: OpOpen, App: "live", Name: "a"}); err == nil || !strings.Contains(err.Error(), "only close") {
		t.Fatalf("open: %v, want refusal", err)
	}

	b, err := c.OpenBuckets(ctx, BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenBuckets(ctx, BucketConfig{}); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if _, err := b.Placements.Put(ctx, StreamKey("live", "a"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	// The publisher delivers asynchronously.
	got := make(chan *nats.Msg, 1)
	s2, _ := c.NC.ChanSubscribe(DemandSubject, got)
	defer s2.Unsubscribe()
	_ = c.NC.Flush()
	p := NewPublisher(c.NC, 4)
	go p.Run(ctx)
	data, _ := Encode(Demand{Events: []DemandEvent{{App: "a", Name: "b", Vertex: "eu", N: 1}}})
	if !p.Publish(DemandSubject, data) {
		t.Fatal("publish refused on an empty queue")
	}
	select {
	case m := <-got:
		if _, err := DecodeDemand(m.Data); err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("demand not delivered")
	}
}

func TestPublisherBounded(t *testing.T) {
	p := NewPublisher(nil, 2) // not running: the queue fills
	for i := 0; i < 5; i++ {
		p.Publish("x", nil)
	}
	if p.Dropped() != 3 {
		t.Fatalf("dropped %d, want 3", p.Dropped())
	}
}

func TestAliveAndProtocols(t *testing.T) {
	subj, err := AliveSubject("relay-eu")
	if err != nil || subj != "relaymesh.v1.relay.relay-eu.alive" {
		t.Fatalf("%q %v", subj, err)
	}
	data, _ := Encode(Alive{ID: "relay-eu", Bye: true})
	if a, err := DecodeAlive(data); err != nil || !a.Bye || a.ID != "relay-eu" {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := DecodeAlive([]byte(`{"id":"a.b"}`)); err == nil {
		t.Fatal("bad id accepted")
	}
	st := StreamStatus{App: "live", Name: "a", Viewers: 3, Protocols: []ProtocolLoad{{Protocol: ProtoRTMP, Viewers: 1}, {Protocol: ProtoHLS, Viewers: 1}, {Protocol: ProtoDASH, Viewers: 1}}}
	if st.HTTPViewers() != 2 {
		t.Fatalf("%d HTTP viewers", st.HTTPViewers())
	}
	data, _ = Encode(Status{ID: "r", Streams: []StreamStatus{st}})
	if got, err := DecodeStatus(data); err != nil || len(got.Streams[0].Protocols) != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := DecodeStatus([]byte(`{"id":"r","viewers":0,"mbps":0,"time":"2025-01-01T00:00:00Z","streams":[{"app":"a","name":"b","viewers":0,"mbps":0,"live":true,"protocols":[{"protocol":"hls","viewers":-1,"mbps":0}]}]}`)); err == nil {
		t.Fatal("negative protocol viewers accepted")
	}
}

// TestAliveSize: a heartbeat and its subject stay around 100 bytes (the
// bus budget in docs/operations.md counts on it).
func TestAliveSize(t *testing.T) {
	id := "relay-eu-west-01"
	subj, _ := AliveSubject(id)
	data, _ := Encode(Alive{ID: id, Time: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)})
	// "PUB <subject> <size>\r\n<payload>\r\n"
	wire := len("PUB ") + len(subj) + len(" 00\r\n") + len(data) + len("\r\n")
	t.Logf("heartbeat: %d bytes of payload, %d on the wire", len(data), wire)
	if wire > 128 {
		t.Errorf("heartbeat takes %d bytes on the wire", wire)
	}
}

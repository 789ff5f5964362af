package authority

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a manual clock for the rate limiters.
type clock struct{ t time.Time }

func (c *clock) now() time.Time              { return c.t }
func (c *clock) add(d time.Duration)         { c.t = c.t.Add(d) }
func newClock() *clock                       { return &clock{t: time.Unix(1000, 0)} }
func ev(t so.EventType, key string) so.Event { return so.Event{Type: t, Key: key} }

func newAuth(t *testing.T, cfg Config) *Authority {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	if cfg.Now == nil {
		cfg.Now = newClock().now
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func connect(t *testing.T, a *Authority, role access.Role, ids ...so.ClientID) {
	t.Helper()
	for _, id := range ids {
		if err := a.Connect(id, ClientInfo{Scope: "live/room", Role: role}); err != nil {
			t.Fatal(err)
		}
	}
}

func use(name string, persistent bool) so.Message {
	return so.Message{Name: name, Persistent: persistent, Events: []so.Event{{Type: so.EventUse}}}
}

func set(name string, kv ...any) so.Message {
	m := so.Message{Name: name}
	for i := 0; i < len(kv); i += 2 {
		m.Events = append(m.Events, so.Event{Type: so.EventRequestChange, Key: kv[i].(string), Value: kv[i+1]})
	}
	return m
}

// to returns the messages for one client, in order.
func to(out []so.Outgoing, id so.ClientID) []*so.Message {
	var ms []*so.Message
	for _, o := range out {
		if o.Client == id {
			ms = append(ms, o.Message)
		}
	}
	return ms
}

func expect(t *testing.T, out []so.Outgoing, id so.ClientID, want ...string) {
	t.Helper()
	ms := to(out, id)
	var got []string
	for _, m := range ms {
		got = append(got, m.Summary())
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("client %d got %q, want %q", id, got, want)
	}
}

func TestUseGivesUseSuccessClearAndFullState(t *testing.T) {
	a := newAuth(t, Config{})
	connect(t, a, access.RoleViewer, 1, 2)
	out := a.Handle(1, use("chat", false))
	expect(t, out, 1, "use-success clear")
	if v := to(out, 1)[0].Version; v != 1 {
		t.Errorf("new object version %d, want 1", v)
	}
	a.Handle(1, set("chat", "b", "two", "a", 1.0))
	out = a.Handle(2, use("chat", false))
	expect(t, out, 2, "use-success clear change:a change:b")
	m := to(out, 2)[0]
	if m.Version != 2 || m.Events[2].Value != 1.0 || m.Events[3].Value != "two" {
		t.Errorf("state %#v", m)
	}
}

func TestChangeFanOutSuccessToRequester(t *testing.T) {
	a := newAuth(t, Config{})
	connect(t, a, access.RoleViewer, 1, 2, 3)
	for _, id := range []so.ClientID{1, 2, 3} {
		a.Handle(id, use("chat", false))
	}
	out := a.Handle(1, set("chat", "x", "1", "y", true, "z", nil))
	expect(t, out, 1, "success:x success:y success:z")
	expect(t, out, 2, "change:x change:y")
	expect(t, out, 3, "change:x change:y")
	for _, o := range out {
		if o.Message.Version != 2 {
			t.Errorf("one batch must bump the version once: %d", o.Message.Version)
		}
	}
	if to(out, 2)[0] != to(out, 3)[0] {
		t.Error("the fan-out message should be shared (encode once)")
	}
	// Versions strictly increase batch after batch.
	last := uint32(2)
	for i := 0; i < 20; i++ {
		out = a.Handle(so.ClientID(1+i%3), set("chat", "k", float64(i)))
		for _, o := range out {
			if o.Message.Version != last+1 {
				t.Fatalf("batch %d: version %d after %d", i, o.Message.Version, last)
			}
		}
		last++
	}
}

func TestRemove(t *testing.T) {
	a := newAuth(t, Config{})
	connect(t, a, access.RoleViewer, 1, 2)
	a.Handle(1, use("chat", false))
	a.Handle(2, use("chat", false))
	a.Handle(1, set("chat", "k", "v"))
	out := a.Handle(2, so.Message{Name: "chat", Events: []so.Event{ev(so.EventRequestRemove, "k")}})
	expect(t, out, 1, "remove:k")
	expect(t, out, 2, "remove:k")
	if to(out, 1)[0].Version != 3 {
		t.Errorf("version %d", to(out, 1)[0].Version)
	}
	// Removing a missing slot answers the requester only, without a new version.
	out = a.Handle(2, so.Message{Name: "chat", Events: []so.Event{ev(so.EventRequestRemove, "k")}})
	expect(t, out, 2, "remove:k")
	expect(t, out, 1)
	// Setting null or undefined deletes.
	a.Handle(1, set("chat", "k", "v"))
	out = a.Handle(1, set("chat", "k", so.Undefined{}))
	expect(t, out, 1, "success:k")
	expect(t, out, 2, "remove:k")
	if _, _, ok := a.Get("live/room", "chat", "k"); ok {
		t.Error("slot still there")
	}
}

func TestSendMessageReachesEveryoneOnce(t *testing.T) {
	a := newAuth(t, Config{})
	connect(t, a, access.RoleViewer, 1, 2, 3)
	for _, id := range []so.ClientID{1, 2, 3} {
		a.Handle(id, use("chat", false))
	}
	out := a.Handle(2, so.Message{Name: "chat", Events: []so.Event{{Type: so.EventSendMessage, Handler: "say", Args: []any{"hi"}}}})
	if len(out) != 3 {
		t.Fatalf("%d messages", len(out))
	}
	for _, id := range []so.ClientID{1, 2, 3} {
		expect(t, out, id, "send-message")
		if to(out, id)[0].Version != 1 {
			t.Error("a message must not change the version")
		}
	}
	out, err := a.Send("live/room", "chat", "system", "welcome")
	if err != nil || len(out) != 3 {
		t.Fatalf("server send: %v %d", err, len(out))
	}
	if _, err := a.Send("live/room", "nope", "x"); !errors.Is(err, ErrNoObject) {
		t.Error(err)
	}
}

func TestReleaseAndDisconnect(t *testing.T) {
	a := newAuth(t, Config{})
	connect(t, a, access.RoleViewer, 1, 2)
	a.Handle(1, use("chat", false))
	a.Handle(2, use("chat", false))
	a.Handle(2, so.Message{Name: "chat", Events: []so.Event{{Type: so.EventRelease}}})
	out := a.Handle(1, set("chat", "k", "v"))
	expect(t, out, 2)
	a.Disconnect(1)
	if _, ok := a.Snapshot("live/room", "chat"); ok {
		t.Error("transient object kept after its last client left")
	}
	if out := a.Handle(1, use("chat", false)); out != nil {
		t.Error("disconnected client still handled")
	}
	// Writing to an object not in use is refused.
	out = a.Handle(2, set("chat", "k", "v"))
	expect(t, out, 2, "status:SharedObject.NoWriteAccess")
	if err := a.Connect(2, ClientInfo{Role: access.RoleViewer}); !errors.Is(err, ErrClient) {
		t.Error("duplicate connect accepted")
	}
	if err := a.Connect(9, ClientInfo{}); !errors.Is(err, ErrClient) {
		t.Error("invalid role accepted")
	}
}

func TestBadPersistence(t *testing.T) {
	a := newAuth(t, Config{})
	connect(t, a, access.RoleViewer, 1, 2)
	a.Handle(1, use("chat", true))
	out := a.Handle(2, use("chat", false))
	expect(t, out, 2, "status:SharedObject.BadPersistence")
	out = a.Handle(2, set("chat", "k", 1.0))
	expect(t, out, 2, "status:SharedObject.NoWriteAccess")
}

func TestWriteRulesAndHook(t *testing.T) {
	rules := access.Rules{
		{Object: "chat", Op: access.OpWrite, Key: "topic", Who: access.Publisher},
		{Object: "chat", Op: access.OpSend, Key: "kick", Who: access.Publisher},
		{Object: "scores", Op: access.OpWrite, Who: access.Nobody},
	}
	hook := HookFunc(func(r Request) error {
		if r.Op == access.OpWrite && strings.HasPrefix(r.Key, "bad") {
			return errors.New("no")
		}
		return nil
	})
	a := newAuth(t, Config{Rules: rules, Hook: hook})
	connect(t, a, access.RoleViewer, 1)
	connect(t, a, access.RolePublisher, 2)
	connect(t, a, access.RoleRelay, 3)
	for _, id := range []so.ClientID{1, 2, 3} {
		a.Handle(id, use("chat", false))
		a.Handle(id, use("scores", false))
	}
	out := a.Handle(2, set("chat", "topic", "news"))
	expect(t, out, 2, "success:topic")
	out = a.Handle(1, set("chat", "topic", "spam", "msg", "hello"))
	expect(t, out, 1, "change:topic status:SharedObject.NoWriteAccess success:msg")
	if m := to(out, 1)[0]; m.Events[0].Value != "news" {
		t.Errorf("refusal must carry the current value: %#v", m.Events[0])
	}
	expect(t, out, 2, "change:msg")
	out = a.Handle(3, set("chat", "topic", "from relay"))
	expect(t, out, 3, "success:topic")
	out = a.Handle(3, set("scores", "a", 1.0))
	expect(t, out, 3, "remove:a status:SharedObject.NoWriteAccess")
	if _, err := a.Set("live/room", "scores", "a", 1.0); err != nil {
		t.Errorf("server-side write refused: %v", err)
	}
	out = a.Handle(1, set("chat", "bad1", 1.0))
	expect(t, out, 1, "remove:bad1 status:SharedObject.NoWriteAccess")
	out = a.Handle(1, so.Message{Name: "chat", Events: []so.Event{{Type: so.EventSendMessage, Handler: "kick", Args: []any{"x"}}}})
	expect(t, out, 1, "status:SharedObject.NoWriteAccess")
	expect(t, out, 2)
	if _, err := New(Config{Rules: access.Rules{{Op: "x"}}}); err == nil {
		t.Error("bad rules accepted")
	}
}

func TestLimits(t *testing.T) {
	a := newAuth(t, Config{Limits: Limits{ValueBytes: 100, SlotsPerObject: 3, ObjectBytes: 250,
		Limits: access.Limits{ObjectsPerClient: 2, NameBytes: 8}, ObjectsPerScope: 3}})
	connect(t, a, access.RoleViewer, 1, 2)
	a.Handle(1, use("o", false))
	lim := "status:SharedObject.LimitExceeded"
	expect(t, a.Handle(1, set("o", "big", strings.Repeat("x", 98))), 1, "remove:big "+lim)
	expect(t, a.Handle(1, set("o", "ok", strings.Repeat("x", 97))), 1, "success:ok")
	expect(t, a.Handle(1, set("o", "ok2", strings.Repeat("x", 97))), 1, "success:ok2")
	expect(t, a.Handle(1, set("o", "ok3", strings.Repeat("x", 97))), 1, "remove:ok3 "+lim) // object bytes
	expect(t, a.Handle(1, set("o", "s3", 1.0)), 1, "success:s3")
	expect(t, a.Handle(1, set("o", "s4", 1.0)), 1, "remove:s4 "+lim) // slots
	expect(t, a.Handle(1, set("o", "s3", 2.0)), 1, "success:s3")     // replacing is fine
	expect(t, a.Handle(1, set("o", "longlongkey", 1.0)), 1, "remove:longlongkey "+lim)
	expect(t, a.Handle(1, set("o", "", 1.0)), 1, "remove "+lim)
	expect(t, a.Handle(1, set("o", "f", func() {})), 1, "remove:f "+lim)
	expect(t, a.Handle(1, use("p", false)), 1, "use-success clear")
	expect(t, a.Handle(1, use("q", false)), 1, lim) // objects per client
	expect(t, a.Handle(2, use("q", false)), 2, "use-success clear")
	expect(t, a.Handle(2, use("r", false)), 2, "status:SharedObject.ObjectCreationFailed") // per scope
	expect(t, a.Handle(2, use("toolongname", false)), 2, "status:SharedObject.ObjectCreationFailed")
	expect(t, a.Handle(2, use("", false)), 2, "status:SharedObject.ObjectCreationFailed")
}

func TestThousandsOfObjects(t *testing.T) {
	a := newAuth(t, Config{})
	connect(t, a, access.RoleRelay, 1) // relays are not bounded per connection
	created, refused := 0, 0
	for i := 0; i < 5000; i++ {
		out := a.Handle(1, use(fmt.Sprintf("o%d", i), false))
		if out[0].Message.Summary() == "use-success clear" {
			created++
		} else {
			refused++
		}
	}
	if created != 1024 || refused != 5000-1024 {
		t.Errorf("created %d refused %d", created, refused)
	}
	a.Disconnect(1)
	if len(a.scopes) != 0 {
		t.Error("objects left after disconnect")
	}
}

func TestRateLimit(t *testing.T) {
	clk := newClock()
	a := newAuth(t, Config{Now: clk.now, Limits: Limits{Limits: access.Limits{MessagesPerSecond: 10, Burst: 5}}})
	connect(t, a, access.RoleViewer, 1)
	connect(t, a, access.RoleRelay, 2)
	a.Handle(1, use("o", false))
	a.Handle(2, use("o", false))
	statuses, accepted := 0, 0
	for i := 0; i < 10000; i++ { // a flood within one instant
		out := a.Handle(1, set("o", "k", float64(i)))
		for _, m := range to(out, 1) {
			switch m.Summary() {
			case "status:SharedObject.LimitExceeded":
				statuses++
			case "success:k":
				accepted++
			}
		}
	}
	if accepted != 4 || statuses != 1 { // burst 5, one used by the use
		t.Errorf("accepted %d, statuses %d", accepted, statuses)
	}
	clk.add(time.Second)
	expect(t, a.Handle(1, set("o", "k", "later")), 1, "success:k")
	for i := 0; i < 1000; i++ { // relays are unlimited by default
		if out := a.Handle(2, set("o", "r", float64(i))); to(out, 2)[0].Summary() != "success:r" {
			t.Fatal("relay throttled")
		}
	}
}

func TestServerSideSetAndDeliver(t *testing.T) {
	var delivered [][]so.Outgoing
	a := newAuth(t, Config{Deliver: func(o []so.Outgoing) { delivered = append(delivered, o) }})
	connect(t, a, access.RoleViewer, 1, 2)
	if out := a.Handle(1, use("chat", false)); out != nil {
		t.Error("with Deliver, Handle returns nil")
	}
	a.Handle(2, use("chat", false))
	if _, err := a.Set("live/room", "chat", "topic", "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Set("live/room", "chat", "topic", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Set("live/room", "chat", "big", strings.Repeat("x", 20000)); err == nil {
		t.Error("oversized server write accepted")
	}
	if len(delivered) != 4 {
		t.Fatalf("%d deliveries", len(delivered))
	}
	expect(t, delivered[2], 1, "change:topic")
	expect(t, delivered[2], 2, "change:topic")
	expect(t, delivered[3], 1, "remove:topic")
}

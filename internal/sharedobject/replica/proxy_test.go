package replica

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newProxy(t testing.TB, cfg Config) *Proxy {
	t.Helper()
	cfg.Logger = quiet
	if cfg.Now == nil {
		now := time.Unix(1000, 0)
		cfg.Now = func() time.Time { return now }
	}
	cfg.Scope = "live/room"
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func msg(name string, version uint32, evs ...so.Event) so.Message {
	return so.Message{Name: name, Version: version, Events: evs}
}

func ev(t so.EventType, key string, v ...any) so.Event {
	e := so.Event{Type: t, Key: key}
	if len(v) > 0 {
		e.Value = v[0]
	}
	return e
}

func expect(t *testing.T, out []so.Outgoing, id so.ClientID, want ...string) {
	t.Helper()
	var got []string
	for _, o := range out {
		if o.Client == id {
			got = append(got, o.Message.Summary())
		}
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("client %d got %q, want %q", id, got, want)
	}
}

func upTypes(up []so.Message) string {
	var s []string
	for i := range up {
		s = append(s, up[i].Name+"["+up[i].Summary()+"]")
	}
	return strings.Join(s, " ")
}

// synced returns a proxy with clients 1..n using "chat", upstream at version 5
// with slot a = 1.
func synced(t *testing.T, cfg Config, n int) *Proxy {
	t.Helper()
	p := newProxy(t, cfg)
	for i := 1; i <= n; i++ {
		if err := p.Connect(so.ClientID(i), access.RoleViewer); err != nil {
			t.Fatal(err)
		}
		up, out := p.FromClient(so.ClientID(i), msg("chat", 0, ev(so.EventUse, "")))
		if i == 1 && upTypes(up) != "chat[use]" || i > 1 && up != nil || out != nil {
			t.Fatalf("use %d: up %s, out %v", i, upTypes(up), out)
		}
	}
	out := p.FromUpstream(msg("chat", 5, ev(so.EventUseSuccess, ""), ev(so.EventClear, ""), ev(so.EventChange, "a", 1.0)))
	for i := 1; i <= n; i++ {
		expect(t, out, so.ClientID(i), "use-success clear change:a")
	}
	return p
}

func TestUseRefCountedAndLocalSync(t *testing.T) {
	p := synced(t, Config{}, 2)
	p.Connect(3, access.RoleViewer)
	up, out := p.FromClient(3, msg("chat", 0, ev(so.EventUse, "")))
	if up != nil {
		t.Error("second use went upstream")
	}
	expect(t, out, 3, "use-success clear change:a")
	if out[0].Message.Version != 5 {
		t.Errorf("local sync version %d", out[0].Message.Version)
	}
	for _, id := range []so.ClientID{1, 2} {
		if up, _ := p.FromClient(id, msg("chat", 5, ev(so.EventRelease, ""))); up != nil {
			t.Error("release went upstream while clients remain")
		}
	}
	if up := p.Disconnect(3); upTypes(up) != "chat[release]" {
		t.Errorf("last release: %s", upTypes(up))
	}
	if s := p.Stats(); s.Objects != 0 {
		t.Errorf("%+v", s)
	}
}

func TestChangeConfirmedByUpstream(t *testing.T) {
	p := synced(t, Config{}, 3)
	up, out := p.FromClient(1, msg("chat", 5, ev(so.EventRequestChange, "k", "v"), ev(so.EventRequestChange, "gone", nil)))
	if upTypes(up) != "chat[request-change:k request-change:gone]" || out != nil {
		t.Fatalf("up %s out %v", upTypes(up), out)
	}
	if v, _, _ := p.Slots("chat"); v["k"] != nil {
		t.Error("applied before upstream confirmed")
	}
	out = p.FromUpstream(msg("chat", 6, ev(so.EventSuccess, "k"), ev(so.EventSuccess, "gone")))
	expect(t, out, 1, "success:k success:gone")
	expect(t, out, 2, "change:k remove:gone")
	expect(t, out, 3, "change:k remove:gone")
	if v, ver, _ := p.Slots("chat"); v["k"] != "v" || ver != 6 {
		t.Errorf("replica %v %d", v, ver)
	}
	// A Success nobody waits for is ignored.
	if out := p.FromUpstream(msg("chat", 6, ev(so.EventSuccess, "zzz"))); out != nil {
		t.Errorf("%v", out)
	}
}

func TestRefusalGoesToRequesterOnly(t *testing.T) {
	p := synced(t, Config{}, 2)
	p.FromClient(2, msg("chat", 5, ev(so.EventRequestChange, "a", 9.0), ev(so.EventRequestRemove, "b")))
	status := so.StatusEvent(so.StatusNoWriteAccess)
	out := p.FromUpstream(msg("chat", 5, ev(so.EventChange, "a", 1.0), status, ev(so.EventRemove, "b"), status))
	expect(t, out, 2, "change:a status:SharedObject.NoWriteAccess remove:b status:SharedObject.NoWriteAccess")
	expect(t, out, 1)
	if s := p.Stats(); s.Pending != 0 {
		t.Errorf("pending %d", s.Pending)
	}
}

func TestUpstreamChangesFanOut(t *testing.T) {
	p := synced(t, Config{}, 3)
	out := p.FromUpstream(msg("chat", 6, ev(so.EventChange, "x", "1"), ev(so.EventRemove, "a"),
		so.Event{Type: so.EventSendMessage, Handler: "say", Args: []any{"hi"}}))
	for _, id := range []so.ClientID{1, 2, 3} {
		expect(t, out, id, "change:x remove:a send-message")
	}
	if out[0].Message != out[1].Message {
		t.Error("fan-out should share one message")
	}
	if out := p.FromUpstream(msg("chat", 4, ev(so.EventChange, "old", 1.0))); out != nil {
		t.Error("stale version applied")
	}
	if out := p.FromUpstream(msg("nope", 9, ev(so.EventChange, "x", 1.0))); out != nil {
		t.Error("unknown object")
	}
}

func TestUpstreamResetResyncs(t *testing.T) {
	p := synced(t, Config{}, 2)
	p.FromClient(1, msg("chat", 5, ev(so.EventRequestChange, "k", "lost")))
	out := p.UpstreamLost()
	expect(t, out, 1, "remove:k status:SharedObject.UpstreamFailure")
	up := p.UpstreamReset()
	if upTypes(up) != "chat[use]" {
		t.Fatalf("reset: %s", upTypes(up))
	}
	// While upstream is away, writes are refused and new clients wait.
	_, out = p.FromClient(2, msg("chat", 5, ev(so.EventRequestChange, "k", "x")))
	expect(t, out, 2, "remove:k status:SharedObject.UpstreamFailure")
	p.Connect(3, access.RoleViewer)
	if up, out := p.FromClient(3, msg("chat", 0, ev(so.EventUse, ""))); up != nil || out != nil {
		t.Error("use while resyncing")
	}
	// The primary restarted: the object is back at a lower version.
	out = p.FromUpstream(msg("chat", 2, ev(so.EventUseSuccess, ""), ev(so.EventClear, ""), ev(so.EventChange, "b", 2.0)))
	expect(t, out, 1, "clear change:b")
	expect(t, out, 2, "clear change:b")
	expect(t, out, 3, "use-success clear change:b")
	if v, ver, _ := p.Slots("chat"); len(v) != 1 || v["b"] != 2.0 || ver != 2 {
		t.Errorf("replica %v %d", v, ver)
	}
	if s := p.Stats(); s.Pending != 0 || s.Members != 3 {
		t.Errorf("%+v", s)
	}
}

func TestUseRefusedUpstream(t *testing.T) {
	p := newProxy(t, Config{})
	p.Connect(1, access.RoleViewer)
	p.Connect(2, access.RoleViewer)
	p.FromClient(1, msg("chat", 0, ev(so.EventUse, "")))
	p.FromClient(2, msg("chat", 0, ev(so.EventUse, "")))
	out := p.FromUpstream(msg("chat", 0, so.StatusEvent(so.StatusCreationFailed)))
	expect(t, out, 1, "status:SharedObject.ObjectCreationFailed")
	expect(t, out, 2, "status:SharedObject.ObjectCreationFailed")
	if s := p.Stats(); s.Objects != 0 {
		t.Errorf("%+v", s)
	}
	// Persistence must match the first local use.
	p.FromClient(1, so.Message{Name: "p", Persistent: true, Events: []so.Event{{Type: so.EventUse}}})
	_, out = p.FromClient(2, msg("p", 0, ev(so.EventUse, "")))
	expect(t, out, 2, "status:SharedObject.BadPersistence")
}

func TestLocalRulesAndLimits(t *testing.T) {
	rules := access.Rules{{Object: "chat", Op: access.OpWrite, Key: "topic", Who: access.Publisher},
		{Op: access.OpSend, Key: "kick", Who: access.Nobody}}
	p := synced(t, Config{Rules: rules, Limits: Limits{PendingPerObject: 2, Limits: access.Limits{MessagesPerSecond: 1, Burst: 6}}}, 1)
	up, out := p.FromClient(1, msg("chat", 5, ev(so.EventRequestChange, "topic", "x")))
	if up != nil {
		t.Error("refused write forwarded")
	}
	expect(t, out, 1, "remove:topic status:SharedObject.NoWriteAccess")
	_, out = p.FromClient(1, msg("chat", 5, so.Event{Type: so.EventSendMessage, Handler: "kick"}))
	expect(t, out, 1, "status:SharedObject.NoWriteAccess")
	up, out = p.FromClient(1, msg("chat", 5, ev(so.EventRequestChange, "a", 1.0), ev(so.EventRequestChange, "b", 1.0), ev(so.EventRequestChange, "c", 1.0)))
	if len(up) != 1 || len(up[0].Events) != 2 {
		t.Errorf("forwarded %s", upTypes(up))
	}
	expect(t, out, 1, "remove:c status:SharedObject.LimitExceeded")
	_, out = p.FromClient(1, msg("other", 5, ev(so.EventRequestChange, "a", 1.0)))
	expect(t, out, 1, "status:SharedObject.NoWriteAccess")
	// Burst 6: one use, four messages above; the next is the last allowed.
	p.FromClient(1, msg("chat", 5))
	for i := 0; i < 100; i++ {
		_, out = p.FromClient(1, msg("chat", 5, ev(so.EventRequestChange, "z", 1.0)))
		if i == 0 {
			expect(t, out, 1, "status:SharedObject.LimitExceeded")
		} else if out != nil {
			t.Fatal("flood answered more than once")
		}
	}
}

func TestCallbacksKeepOrder(t *testing.T) {
	var ups []string
	var outs int
	p := newProxy(t, Config{
		Upstream: func(m []so.Message) { ups = append(ups, upTypes(m)) },
		Deliver:  func(o []so.Outgoing) { outs += len(o) },
	})
	p.Connect(1, access.RoleViewer)
	if up, out := p.FromClient(1, msg("chat", 0, ev(so.EventUse, ""))); up != nil || out != nil {
		t.Error("callbacks set: nothing returned")
	}
	if out := p.FromUpstream(msg("chat", 1, ev(so.EventUseSuccess, ""), ev(so.EventClear, ""))); out != nil {
		t.Error("returned")
	}
	p.UpstreamReset()
	if strings.Join(ups, ",") != "chat[use],chat[use]" || outs != 1 {
		t.Errorf("%v %d", ups, outs)
	}
	if err := p.Connect(1, access.RoleViewer); err == nil {
		t.Error("duplicate")
	}
	if _, err := New(Config{Rules: access.Rules{{Op: "x"}}}); err == nil {
		t.Error("bad rules")
	}
}

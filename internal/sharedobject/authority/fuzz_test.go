package authority

import (
	"testing"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
	"github.com/relaymesh/relaymesh/internal/sharedobject/replica"
)

// FuzzHandle feeds any decodable shared-object message to the authority (from
// a viewer and from a relay) and to a relay replica (from a client and from
// upstream): nothing panics and the replica's pending count stays sane.
func FuzzHandle(f *testing.F) {
	seeds := []so.Message{
		use("chat", false), use("p", true), set("chat", "k", "v", "n", nil),
		{Name: "chat", Events: []so.Event{{Type: so.EventRequestRemove, Key: "k"}, {Type: so.EventRelease}}},
		{Name: "chat", Version: 3, Events: []so.Event{{Type: so.EventUseSuccess}, {Type: so.EventClear},
			{Type: so.EventChange, Key: "k", Value: 1.0}, {Type: so.EventSuccess, Key: "k"},
			{Type: so.EventRemove, Key: "k"}, so.StatusEvent(so.StatusNoWriteAccess)}},
		{Name: "chat", Events: []so.Event{{Type: so.EventSendMessage, Handler: "say", Args: []any{"x"}}}},
	}
	for _, m := range seeds {
		b, err := m.AppendEncode(nil, false)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, b)
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		a, err := New(Config{Logger: quiet, Limits: Limits{SlotsPerObject: 8, ObjectsPerScope: 4}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := replica.New(replica.Config{Scope: "live/room", Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		must(t, a.Connect(1, ClientInfo{Scope: "live/room", Role: access.RoleViewer}))
		must(t, a.Connect(2, ClientInfo{Scope: "live/room", Role: access.RoleRelay}))
		must(t, p.Connect(1, access.RoleViewer))
		must(t, p.Connect(2, access.RoleRelay))
		for _, payload := range [][]byte{first, second} {
			m, err := so.Decode(payload, false)
			if err != nil {
				continue
			}
			a.Handle(1, use(m.Name, m.Persistent))
			a.Handle(1, m)
			a.Handle(2, m)
			p.FromClient(1, use(m.Name, m.Persistent))
			p.FromClient(2, m)
			p.FromUpstream(m)
			p.FromClient(1, m)
		}
		if s := p.Stats(); s.Pending < 0 {
			t.Fatalf("negative pending: %+v", s)
		}
		p.UpstreamLost()
		p.UpstreamReset()
		a.Disconnect(1)
		a.Disconnect(2)
		p.Disconnect(1)
		p.Disconnect(2)
		if s := p.Stats(); s != (replica.Stats{}) {
			t.Fatalf("proxy not empty after disconnects: %+v", s)
		}
		if len(a.scopes) != 0 {
			t.Fatalf("authority not empty after disconnects")
		}
	})
}

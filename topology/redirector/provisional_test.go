package redirector

import (
	"net/url"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/topology/placement"
)

// A Tokyo viewer sent to the primary (eu) while relay-as of its stream is
// starting gets a provisional token; once relay-as serves, the same token
// does not hold the viewer at the primary. A Berlin viewer, for whom no
// nearer relay is starting, gets an ordinary token.
func TestProvisionalTokenWhileANearerRelayStarts(t *testing.T) {
	r := newTest(t, nil, Config{DevIP: true})
	h := r.Handler()
	r.onStatus(bus.Status{ID: "relay-as", Location: "as", Time: time.Now()})
	r.onPlacement(bus.Placement{App: "live", Name: "a", Relays: []bus.PlacedRelay{{Server: "relay-as", Parent: "primary", State: bus.StateOpening}}})

	tokyo := choice(t, h, "/play/live/a?ip=203.0.113.5")
	if tokyo.Relay != "primary" || !tokyo.Provisional {
		t.Fatalf("Tokyo while relay-as starts: %+v", tokyo)
	}
	c, err := placement.Verify(r.cfg.TokenKey, tokyo.Token, time.Now())
	if err != nil || !c.Provisional || c.Server != "primary" {
		t.Fatalf("Tokyo's token: %+v, %v", c, err)
	}
	if berlin := choice(t, h, "/play/live/a?ip=192.0.2.7"); berlin.Relay != "primary" || berlin.Provisional {
		t.Fatalf("Berlin: %+v", berlin)
	}
	if c, err := placement.Verify(r.cfg.TokenKey, choice(t, h, "/play/live/a?ip=192.0.2.7").Token, time.Now()); err != nil || c.Provisional {
		t.Fatalf("Berlin's token: %+v, %v", c, err)
	}

	// relay-as serves: Tokyo's provisional token no longer holds it at the
	// primary, and its new token is an ordinary one.
	r.onPlacement(bus.Placement{App: "live", Name: "a", Relays: []bus.PlacedRelay{{Server: "relay-as", Parent: "primary", State: bus.StateReady}}})
	again := choice(t, h, "/play/live/a?ip=203.0.113.5&"+TokenParam+"="+url.QueryEscape(tokyo.Token))
	if again.Relay != "relay-as" || again.Provisional {
		t.Fatalf("Tokyo once relay-as serves: %+v", again)
	}
	// An ordinary token would have held it there (the 5-minute stickiness
	// the provisional one avoids).
	plain, err := placement.Sign(r.cfg.TokenKey, placement.Claims{Server: "primary", Stream: "live/a", Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if held := choice(t, h, "/play/live/a?ip=203.0.113.5&"+TokenParam+"="+url.QueryEscape(plain)); held.Relay != "primary" {
		t.Fatalf("Tokyo with an ordinary token: %+v", held)
	}
}

// A Tokyo viewer whose nearest relay (relay-as) went down is sent to the
// primary with a provisional token: it comes back once a carrier near it
// can take it again, not when its token ends. Before relay-as ever
// reported, the same answer is an ordinary token (nobody was displaced).
func TestProvisionalTokenWhenANearerServerIsDown(t *testing.T) {
	r := newTest(t, nil, Config{DevIP: true})
	h := r.Handler()
	r.onPlacement(bus.Placement{App: "live", Name: "a"})
	if tokyo := choice(t, h, "/play/live/a?ip=203.0.113.5"); tokyo.Relay != "primary" || tokyo.Provisional {
		t.Fatalf("Tokyo before relay-as reported: %+v", tokyo)
	}
	r.onStatus(bus.Status{ID: "relay-as", Location: "as", Time: time.Now()})
	r.onPlacement(bus.Placement{App: "live", Name: "a", Relays: []bus.PlacedRelay{{Server: "relay-as", Parent: "primary", State: bus.StateReady}}})
	if tokyo := choice(t, h, "/play/live/a?ip=203.0.113.5"); tokyo.Relay != "relay-as" || tokyo.Provisional {
		t.Fatalf("Tokyo with relay-as serving: %+v", tokyo)
	}
	id, ok := r.mesh.ServerByID("relay-as")
	if !ok {
		t.Fatal("no relay-as")
	}
	r.markDown(id, "test")
	tokyo := choice(t, h, "/play/live/a?ip=203.0.113.5")
	if tokyo.Relay != "primary" || !tokyo.Provisional {
		t.Fatalf("Tokyo with relay-as down: %+v", tokyo)
	}
	if berlin := choice(t, h, "/play/live/a?ip=192.0.2.7"); berlin.Relay != "primary" || berlin.Provisional {
		t.Fatalf("Berlin (relay-as is not nearer than the primary): %+v", berlin)
	}
}

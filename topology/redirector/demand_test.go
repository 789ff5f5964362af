package redirector

import (
	"testing"

	"github.com/relaymesh/relaymesh/internal/bus/bustest"
)

// A request no server could take counts in its batch's N and in Full (the
// controller counts those viewers as waiting).
func TestDemandCountsTurnedAwayRequests(t *testing.T) {
	_, c := bustest.Start(t)
	r := newTest(t, c, Config{DevIP: true})
	v, ok := r.mesh.Graph().Vertex("JP")
	if !ok {
		t.Fatal("no JP")
	}
	r.noteDemand("live/a", v, 3, false)
	r.noteDemand("live/a", v, 3, true)
	r.noteDemand("live/a", v, 3, true)
	d := r.demand[demandKey{"live/a", v}]
	if d.n != 3 || d.full != 2 {
		t.Fatalf("demand %+v, want n 3, full 2", d)
	}
}

package replica

import (
	"fmt"
	"testing"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

// BenchmarkProxyChange measures one authoritative change from upstream fanned
// out to n local clients: the cost grows with n (one Outgoing per client),
// while allocations per change stay constant (one shared message, one slice).
func BenchmarkProxyChange(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			p := newProxy(b, Config{})
			for i := 1; i <= n; i++ {
				id := so.ClientID(i)
				if err := p.Connect(id, access.RoleViewer); err != nil {
					b.Fatal(err)
				}
				p.FromClient(id, msg("chat", 0, ev(so.EventUse, "")))
			}
			p.FromUpstream(msg("chat", 1, ev(so.EventUseSuccess, ""), ev(so.EventClear, "")))
			m := msg("chat", 1, ev(so.EventChange, "score", 42.0))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.Version++
				if out := p.FromUpstream(m); len(out) != n {
					b.Fatalf("%d messages", len(out))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/client")
		})
	}
}

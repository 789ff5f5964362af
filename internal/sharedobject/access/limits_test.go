package access

import "testing"

func TestLimitsDefaultsAndLimiter(t *testing.T) {
	l := Limits{}.WithDefaults()
	if l != DefaultLimits {
		t.Fatalf("zero Limits with defaults = %+v, want %+v", l, DefaultLimits)
	}
	if lim := l.Limiter(RoleViewer); lim == nil || lim.Burst() != 100 {
		t.Fatalf("viewer limiter %v", lim)
	}
	if lim := l.Limiter(RoleRelay); lim != nil {
		t.Fatal("relays are unlimited by default")
	}
	l.RelayMessagesPerSecond = 5
	if lim := l.Limiter(RoleRelay); lim == nil || lim.Burst() != 1000 {
		t.Fatalf("relay limiter %v", lim)
	}
	if l.NameOK("") || !l.NameOK("x") || l.NameOK(string(make([]byte, 257))) {
		t.Fatal("NameOK bounds")
	}
	if !l.MayUseMore(RoleViewer, 63) || l.MayUseMore(RoleViewer, 64) || !l.MayUseMore(RoleRelay, 1<<20) {
		t.Fatal("MayUseMore bounds")
	}
}

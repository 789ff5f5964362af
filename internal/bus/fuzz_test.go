package bus

import "testing"

// FuzzDecode feeds hostile bytes to every decoder: errors are fine, panics
// are not, and whatever decodes must encode and decode again.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"op":"open","app":"live","name":"a","parent":"rtmp://h:1"}`))
	f.Add([]byte(`{"id":"r","viewers":1,"mbps":1,"time":"2025-01-01T00:00:00Z","streams":[{"app":"a","name":"b","viewers":1,"mbps":0,"live":true}]}`))
	f.Add([]byte(`{"id":"r","viewers":2,"mbps":1,"time":"2025-01-01T00:00:00Z","streams":[{"app":"a","name":"b","viewers":2,"mbps":1,"live":true,"protocols":[{"protocol":"hls","viewers":2,"mbps":1}]}]}`))
	f.Add([]byte(`{"id":"r","bye":true,"time":"2025-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"app":"live","name":"a","cells":[{"location":"as","value":2.5,"at":"2025-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"type":"io.nats.server.advisory.v1.client_disconnect","timestamp":"2026-01-02T03:04:05Z","server":{"id":"N1"},"client":{"id":7,"name":"relay-na"},"reason":"Client Closed"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := DecodeCommand(data); err == nil {
			b, _ := Encode(c)
			if _, err := DecodeCommand(b); err != nil {
				t.Fatalf("command does not round-trip: %v", err)
			}
		}
		if s, err := DecodeStatus(data); err == nil {
			b, _ := Encode(s)
			if _, err := DecodeStatus(b); err != nil {
				t.Fatalf("status does not round-trip: %v", err)
			}
		}
		_, _ = DecodeAlive(data)
		_, _ = DecodeDisconnect(data)
		_, _ = DecodeDemand(data)
		_, _ = DecodePlacement(data)
		if b, err := DecodeBonuses(data); err == nil {
			e, _ := Encode(b)
			if _, err := DecodeBonuses(e); err != nil {
				t.Fatalf("bonuses do not round-trip: %v", err)
			}
		}
		_, _ = DecodeStreamEvent(data)
		_, _ = DecodeReply(data)
		_, _ = DecodeLease(data)
		_, _, _ = ParseStreamKey(string(data))
	})
}

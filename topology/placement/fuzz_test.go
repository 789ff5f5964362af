package placement

import (
	"testing"
	"time"
)

// FuzzVerify: arbitrary tokens give claims or an error, never a panic, and
// a token that verifies round-trips through Sign.
func FuzzVerify(f *testing.F) {
	key := []byte("fuzz-key")
	now := time.Unix(1_700_000_000, 0)
	tok, _ := Sign(key, Claims{Server: "relay-eu", Stream: "live", Expires: now.Add(time.Hour)})
	f.Add(tok)
	f.Fuzz(func(t *testing.T, token string) {
		c, err := Verify(key, token, now)
		if err != nil {
			return
		}
		again, err := Sign(key, c)
		if err != nil {
			t.Fatalf("verified claims do not sign again: %v", err)
		}
		if c2, err := Verify(key, again, now); err != nil || c2 != c {
			t.Fatalf("round trip: %+v %v", c2, err)
		}
	})
}

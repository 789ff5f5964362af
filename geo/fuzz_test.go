package geo

import (
	"net/netip"
	"testing"
)

// FuzzOpenBytes feeds arbitrary bytes to the database opener and looks up
// a few addresses in whatever opens: no input may panic or hang.
func FuzzOpenBytes(f *testing.F) {
	f.Add(defaultCity)
	f.Add(defaultCity[len(defaultCity)/2:])
	f.Add([]byte("\xab\xcd\xefMaxMind.com"))
	addrs := []netip.Addr{
		netip.MustParseAddr("81.2.69.142"),
		netip.MustParseAddr("192.0.2.1"),
		netip.MustParseAddr("2001:db8:6::1"),
		netip.MustParseAddr("8.8.8.8"),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, verify := range []bool{false, true} {
			db, err := OpenBytes(data, "fuzz", OpenOptions{Verify: verify, MaxSize: 1 << 20})
			if err != nil {
				continue
			}
			for _, a := range addrs {
				_, _ = db.Lookup(a)
			}
		}
	})
}

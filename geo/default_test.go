package geo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
	"testing"
)

// TestDefaultDatabase checks the addresses README.md documents; it needs
// nothing outside the repository.
func TestDefaultDatabase(t *testing.T) {
	db, err := OpenDefault()
	if err != nil {
		t.Fatal(err)
	}
	if m := db.Metadata(); m.Type != "GeoIP2-City" || db.Name() != DefaultName {
		t.Errorf("metadata %+v, name %q", m, db.Name())
	}
	cases := []struct {
		addrs                                     []string
		country, registered, continent, sub, city string
		geonameID                                 uint
	}{
		{[]string{"192.0.2.1", "198.18.1.1", "127.0.1.1", "2001:db8:1::1"}, "DE", "DE", "EU", "BE", "Berlin", 2950159},
		{[]string{"198.51.100.7", "198.18.2.1", "127.0.2.1", "2001:db8:2::1"}, "US", "US", "NA", "NY", "New York City", 5128581},
		{[]string{"203.0.113.9", "198.18.3.1", "127.0.3.1", "2001:db8:3::1"}, "JP", "JP", "AS", "13", "Tokyo", 1850147},
		{[]string{"198.18.4.1", "127.0.4.1", "2001:db8:4::1"}, "BR", "BR", "SA", "SP", "São Paulo", 3448439},
		{[]string{"198.18.5.1", "127.0.5.1", "2001:db8:5::1"}, "ZA", "ZA", "AF", "GP", "Johannesburg", 993800},
		{[]string{"198.18.6.1", "127.0.6.1", "2001:db8:6::1"}, "AU", "AU", "OC", "NSW", "Sydney", 2147714},
		{[]string{"198.18.7.1", "127.0.7.1"}, "FR", "FR", "EU", "", "", 0},
		{[]string{"198.18.8.1", "127.0.8.1"}, "", "NL", "EU", "", "", 0},
		{[]string{"81.2.69.142", "::ffff:81.2.69.200"}, "GB", "US", "EU", "ENG", "London", 2643743},
		{[]string{"216.160.83.60"}, "US", "GB", "NA", "WA", "Milton", 5803556},
		{[]string{"89.160.20.200"}, "SE", "DE", "EU", "E", "Linköping", 2694762},
		{[]string{"214.78.121.1", "2001:480:10::5"}, "US", "US", "NA", "CA", "San Diego", 5391811},
		{[]string{"175.16.199.1"}, "CN", "CN", "AS", "22", "Changchun", 2038180},
		{[]string{"214.0.0.1"}, "SG", "SG", "AS", "", "Singapore", 1880252},
		{[]string{"214.0.1.1"}, "AU", "AU", "OC", "VIC", "Melbourne", 2158177},
		{[]string{"67.43.156.1"}, "BT", "RO", "AS", "", "", 0},
		{[]string{"2a02:d500::1"}, "", "", "EU", "", "", 0},
	}
	for _, c := range cases {
		for _, a := range c.addrs {
			l, err := db.Lookup(netip.MustParseAddr(a))
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			if !l.Found || l.Country != c.country || l.RegisteredCountry != c.registered || l.Continent != c.continent ||
				l.Subdivision != c.sub || l.City != c.city || l.GeonameID != c.geonameID {
				t.Errorf("%s: got %+v", a, l)
			}
		}
	}
	for _, a := range []string{"127.0.0.1", "10.0.0.1", "::1", "192.0.3.1", "8.8.8.8"} {
		l, err := db.Lookup(netip.MustParseAddr(a))
		if err != nil || l.Found {
			t.Errorf("%s: %+v, %v; want not found", a, l, err)
		}
	}
}

// TestLookupCorruptRecord damages one record of a good database: it opens
// (the probe does not touch it), the damaged record fails cleanly on
// lookup, the others still work, and Verify refuses the file.
func TestLookupCorruptRecord(t *testing.T) {
	data := bytes.Clone(defaultCity)
	var lat [9]byte
	lat[0] = 0x68 // MaxMind DB control byte: double, 8 bytes
	binary.BigEndian.PutUint64(lat[1:], math.Float64bits(-33.86785))
	i := bytes.Index(data, lat[:])
	if i < 0 || bytes.Count(data, lat[:]) != 1 {
		t.Fatal("Sydney's latitude not found exactly once")
	}
	data[i] = 0x67 // a double of 7 bytes: invalid
	db, err := OpenBytes(data, "damaged", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Lookup(netip.MustParseAddr("198.18.6.1")); !errors.Is(err, ErrInvalidDatabase) {
		t.Errorf("damaged record: err = %v, want ErrInvalidDatabase", err)
	} else {
		t.Log(err)
	}
	if l, err := db.Lookup(netip.MustParseAddr("192.0.2.1")); err != nil || l.City != "Berlin" {
		t.Errorf("intact record: %+v, %v", l, err)
	}
	if _, err := OpenBytes(data, "damaged", OpenOptions{Verify: true}); !errors.Is(err, ErrInvalidDatabase) {
		t.Errorf("verify: err = %v, want ErrInvalidDatabase", err)
	}
}

package geo

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLookupCityTest(t *testing.T) {
	db := openShared(t, OpenOptions{Verify: true}, "maxmind-test", "GeoIP2-City-Test.mmdb")
	cases := []struct {
		addr string
		want Location
	}{
		{"81.2.69.142", Location{Country: "GB", RegisteredCountry: "US", Continent: "EU", Subdivision: "ENG",
			City: "London", GeonameID: 2643743, Latitude: 51.5142, Longitude: -0.0931, HasCoordinates: true,
			AccuracyRadius: 10, Found: true}},
		{"::ffff:81.2.69.142", Location{Country: "GB", RegisteredCountry: "US", Continent: "EU", Subdivision: "ENG",
			City: "London", GeonameID: 2643743, Latitude: 51.5142, Longitude: -0.0931, HasCoordinates: true,
			AccuracyRadius: 10, Found: true}},
		{"216.160.83.56", Location{Country: "US", RegisteredCountry: "GB", Continent: "NA", Subdivision: "WA",
			City: "Milton", GeonameID: 5803556, Latitude: 47.2513, Longitude: -122.3149, HasCoordinates: true,
			AccuracyRadius: 22, Found: true}},
		{"89.160.20.112", Location{Country: "SE", RegisteredCountry: "DE", Continent: "EU", Subdivision: "E",
			City: "Linköping", GeonameID: 2694762, Latitude: 58.4167, Longitude: 15.6167, HasCoordinates: true,
			AccuracyRadius: 76, Found: true}},
		{"175.16.199.7", Location{Country: "CN", RegisteredCountry: "CN", Continent: "AS", Subdivision: "22",
			City: "Changchun", GeonameID: 2038180, Latitude: 43.88, Longitude: 125.3228, HasCoordinates: true,
			AccuracyRadius: 100, Found: true}},
		{"2001:480:10::1", Location{Country: "US", RegisteredCountry: "US", Continent: "NA", Subdivision: "CA",
			City: "San Diego", GeonameID: 5391811, Latitude: 32.7203, Longitude: -117.1552, HasCoordinates: true,
			AccuracyRadius: 20, Found: true}},
		// Country only, registered elsewhere.
		{"67.43.156.1", Location{Country: "BT", RegisteredCountry: "RO", Continent: "AS",
			Latitude: 27.5, Longitude: 90.5, HasCoordinates: true, AccuracyRadius: 534, Found: true}},
		// Continent only.
		{"2a02:d500::1", Location{Continent: "EU", Latitude: 48.69096, Longitude: 9.14062, HasCoordinates: true,
			AccuracyRadius: 100, Found: true}},
		// Absent: no data, no error.
		{"8.8.8.8", Location{}},
		// Private and loopback: flagged, no error.
		{"10.1.2.3", Location{Reserved: true}},
		{"127.0.0.1", Location{Reserved: true}},
		{"::1", Location{Reserved: true}},
		{"fe80::1%eth0", Location{Reserved: true}},
	}
	for _, c := range cases {
		got, err := db.Lookup(netip.MustParseAddr(c.addr))
		if err != nil {
			t.Errorf("%s: %v", c.addr, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.addr, got, c.want)
		}
	}
	if _, err := db.Lookup(netip.Addr{}); !errors.Is(err, ErrInvalidAddress) {
		t.Errorf("zero address: err = %v, want ErrInvalidAddress", err)
	}
	if m := db.Metadata(); m.Type != "GeoIP2-City" || m.IPVersion != 6 || m.NodeCount == 0 {
		t.Errorf("metadata = %+v", m)
	}
}

// jsonRecord is the part of MaxMind's test source JSON that Location carries.
type jsonRecord struct {
	Continent struct {
		Code string `json:"code"`
	} `json:"continent"`
	Country struct {
		ISOCode string `json:"iso_code"`
	} `json:"country"`
	RegisteredCountry struct {
		ISOCode string `json:"iso_code"`
	} `json:"registered_country"`
	Subdivisions []struct {
		ISOCode string `json:"iso_code"`
	} `json:"subdivisions"`
	City struct {
		GeonameID uint              `json:"geoname_id"`
		Names     map[string]string `json:"names"`
	} `json:"city"`
	Location struct {
		Latitude       *float64 `json:"latitude"`
		Longitude      *float64 `json:"longitude"`
		AccuracyRadius uint16   `json:"accuracy_radius"`
	} `json:"location"`
}

// firstAddr turns a network of the test sources into its first address;
// MaxMind writes IPv4 networks of IPv6 trees as "::a.b.c.d/1xx".
func firstAddr(t *testing.T, network string) netip.Addr {
	t.Helper()
	p, err := netip.ParsePrefix(network)
	if err != nil {
		t.Fatalf("network %q: %v", network, err)
	}
	a := p.Masked().Addr()
	if a.Is6() && p.Bits() >= 96 {
		b := a.As16()
		if [12]byte(b[:12]) == ([12]byte{}) {
			a = netip.AddrFrom4([4]byte(b[12:]))
		}
	}
	return a
}

// TestLookupMatchesTestSources checks every network of MaxMind's test
// sources against the database built from them.
func TestLookupMatchesTestSources(t *testing.T) {
	for _, name := range []string{"GeoIP2-City-Test", "GeoLite2-City-Test", "GeoIP2-Country-Test", "GeoLite2-Country-Test"} {
		t.Run(name, func(t *testing.T) {
			db := openShared(t, OpenOptions{}, "maxmind-test", name+".mmdb")
			raw, err := os.ReadFile(sharedData(t, "maxmind-test", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var entries []map[string]jsonRecord
			if err := json.Unmarshal(raw, &entries); err != nil {
				t.Fatal(err)
			}
			// Later entries override earlier ones for the same network.
			want := map[netip.Addr]jsonRecord{}
			var order []netip.Addr
			for _, e := range entries {
				for network, rec := range e {
					a := firstAddr(t, network)
					if _, ok := want[a]; !ok {
						order = append(order, a)
					}
					want[a] = rec
				}
			}
			if len(order) < 10 {
				t.Fatalf("only %d networks in the source", len(order))
			}
			for _, a := range order {
				w := want[a]
				got, err := db.Lookup(a)
				if err != nil {
					t.Errorf("%s: %v", a, err)
					continue
				}
				sub := ""
				if len(w.Subdivisions) > 0 {
					sub = w.Subdivisions[0].ISOCode
				}
				exp := Location{
					Country: w.Country.ISOCode, RegisteredCountry: w.RegisteredCountry.ISOCode,
					Continent: w.Continent.Code, Subdivision: sub,
					City: w.City.Names["en"], GeonameID: w.City.GeonameID,
				}
				g := got
				g.Latitude, g.Longitude, g.HasCoordinates, g.AccuracyRadius, g.Found, g.Reserved = 0, 0, false, 0, false, false
				if g != exp {
					t.Errorf("%s:\n got %+v\nwant %+v", a, g, exp)
				}
				if strings.Contains(name, "City") && w.Location.Latitude != nil {
					if !got.HasCoordinates || got.Latitude != *w.Location.Latitude || got.Longitude != *w.Location.Longitude ||
						got.AccuracyRadius != w.Location.AccuracyRadius {
						t.Errorf("%s: coordinates %v,%v r%d, want %v,%v r%d", a, got.Latitude, got.Longitude, got.AccuracyRadius,
							*w.Location.Latitude, *w.Location.Longitude, w.Location.AccuracyRadius)
					}
				}
			}
		})
	}
}

// TestGeoLite2Samples checks the real GeoLite2 City subset against its
// sample file, one address per network.
func TestGeoLite2Samples(t *testing.T) {
	db := openShared(t, OpenOptions{Verify: true}, "geoip", "GeoLite2-City-20191224-subset-1Mcities.mmdb")
	country := openShared(t, OpenOptions{}, "geoip", "GeoLite2-Country-20191224.mmdb")
	f, err := os.Open(sharedData(t, "geoip", "GeoLite2-City-20191224-subset-1Mcities.samples.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 1000 || strings.Join(rows[0], ",") != "sample_ip,network,country_iso,city_en,subdivision_iso,latitude,longitude,city_population" {
		t.Fatalf("unexpected samples file: %d rows, header %v", len(rows), rows[0])
	}
	countryMismatch := 0
	for _, r := range rows[1:] {
		a := netip.MustParseAddr(r[0])
		got, err := db.Lookup(a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		lat, _ := strconv.ParseFloat(r[5], 64)
		lon, _ := strconv.ParseFloat(r[6], 64)
		if !got.Found || got.Country != r[2] || got.City != r[3] || got.Subdivision != r[4] ||
			math.Abs(got.Latitude-lat) > 1e-4 || math.Abs(got.Longitude-lon) > 1e-4 {
			t.Errorf("%s: got %s/%s/%s %v,%v; want %s/%s/%s %v,%v", a,
				got.Country, got.Subdivision, got.City, got.Latitude, got.Longitude, r[2], r[4], r[3], lat, lon)
		}
		c, err := country.Lookup(a)
		if err != nil {
			t.Fatalf("country db %s: %v", a, err)
		}
		if c.City != "" || c.GeonameID != 0 || c.HasCoordinates {
			t.Errorf("country db %s: city data %+v", a, c)
		}
		if c.Country != r[2] {
			countryMismatch++
		}
	}
	// Same build: the Country database should agree on (nearly) every sample.
	if countryMismatch > len(rows)/100 {
		t.Errorf("country database disagrees on %d of %d samples", countryMismatch, len(rows)-1)
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "9.9.9.9"} {
		loc, err := country.Lookup(netip.MustParseAddr(a))
		if err != nil || !loc.Found || loc.EffectiveCountry() == "" || loc.Continent == "" {
			t.Errorf("country db %s: %+v, %v", a, loc, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.mmdb")
	garbage := filepath.Join(dir, "garbage.mmdb")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		opts OpenOptions
		want error
	}{
		{filepath.Join(dir, "missing.mmdb"), OpenOptions{}, fs.ErrNotExist},
		{empty, OpenOptions{}, ErrInvalidDatabase},
		{garbage, OpenOptions{}, ErrInvalidDatabase},
		{garbage, OpenOptions{MaxSize: 100}, ErrTooLarge},
	}
	for _, c := range cases {
		db, err := Open(c.path, c.opts)
		if !errors.Is(err, c.want) || db != nil {
			t.Errorf("Open(%s, %+v) = %v, %v; want %v", filepath.Base(c.path), c.opts, db, err, c.want)
		} else if !strings.Contains(err.Error(), c.path) {
			t.Errorf("error does not name the file: %v", err)
		}
	}
	if _, err := Open(dir, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Open(directory): %v", err)
	}
	if _, err := OpenBytes(make([]byte, 200), "x", OpenOptions{MaxSize: 100}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("OpenBytes over the limit: %v", err)
	}
}

func TestOpenSharedBroken(t *testing.T) {
	cases := []struct {
		file string
		want error
	}{
		{"GeoIP2-City-Test-Invalid-Node-Count.mmdb", ErrInvalidDatabase},
		{"GeoLite2-ASN-Test.mmdb", ErrWrongDatabaseType},
		{"GeoIP2-Anonymous-IP-Test.mmdb", ErrWrongDatabaseType},
		{"GeoIP2-Connection-Type-Test.mmdb", ErrWrongDatabaseType},
		{"MaxMind-DB-test-ipv4-24.mmdb", ErrWrongDatabaseType},
	}
	for _, c := range cases {
		for _, verify := range []bool{false, true} {
			_, err := Open(sharedData(t, "maxmind-test", c.file), OpenOptions{Verify: verify})
			if !errors.Is(err, c.want) {
				t.Errorf("%s (verify %v): err = %v, want %v", c.file, verify, err, c.want)
			}
			t.Logf("%s: %v", c.file, err)
		}
	}

	// The double-format damage shows only when the damaged record is read:
	// without Verify the file opens and the lookup fails cleanly; with
	// Verify it is refused up front.
	broken := sharedData(t, "maxmind-test", "GeoIP2-City-Test-Broken-Double-Format.mmdb")
	db, err := Open(broken, OpenOptions{})
	if err != nil {
		t.Logf("opening without verify already fails: %v", err)
		if !errors.Is(err, ErrInvalidDatabase) {
			t.Errorf("want ErrInvalidDatabase, got %v", err)
		}
	} else {
		var lookupErr error
		for _, a := range []string{"2001:220::1", "81.2.69.160", "216.160.83.56", "89.160.20.112", "175.16.199.1", "2001:480:10::1"} {
			if _, err := db.Lookup(netip.MustParseAddr(a)); err != nil {
				lookupErr = err
				break
			}
		}
		if !errors.Is(lookupErr, ErrInvalidDatabase) {
			t.Errorf("lookups in the broken database: err = %v, want ErrInvalidDatabase", lookupErr)
		}
		t.Logf("broken double: %v", lookupErr)
	}
	if _, err := Open(broken, OpenOptions{Verify: true}); !errors.Is(err, ErrInvalidDatabase) {
		t.Errorf("verify of the broken database: err = %v, want ErrInvalidDatabase", err)
	} else {
		t.Logf("broken double, verify: %v", err)
	}
}

func TestLocationJSON(t *testing.T) {
	b, err := json.Marshal(Location{Country: "GB", City: "London", GeonameID: 2643743, Latitude: 51.5, Longitude: -0.1, HasCoordinates: true, Found: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"country":"GB","registered_country":"","continent":"","subdivision":"","city":"London","geoname_id":2643743,"latitude":51.5,"longitude":-0.1,"accuracy_radius":0,"found":true,"reserved":false}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(Location{Reserved: true})
	if !strings.Contains(string(b), `"latitude":null`) {
		t.Errorf("absent coordinates should be null: %s", b)
	}
}

func TestIsReserved(t *testing.T) {
	for a, want := range map[string]bool{
		"10.0.0.1": true, "172.16.5.4": true, "192.168.0.1": true, "127.0.0.1": true, "0.0.0.0": true,
		"169.254.1.1": true, "100.64.0.1": true, "192.0.2.1": true, "198.51.100.1": true, "203.0.113.1": true,
		"198.18.0.1": true, "224.0.0.1": true, "255.255.255.255": true, "::1": true, "::": true, "fe80::1": true,
		"fc00::1": true, "ff02::1": true, "2001:db8::1": true, "::ffff:10.0.0.1": true,
		"8.8.8.8": false, "81.2.69.142": false, "2001:4860:4860::8888": false, "::ffff:8.8.8.8": false,
	} {
		if got := IsReserved(netip.MustParseAddr(a)); got != want {
			t.Errorf("IsReserved(%s) = %v", a, got)
		}
	}
	if IsReserved(netip.Addr{}) {
		t.Error("zero address reported reserved")
	}
}

func BenchmarkLookup(b *testing.B) {
	for _, bc := range []struct{ name, addr string }{
		{"default/city", "81.2.69.142"},
		{"default/miss", "8.8.8.8"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			db, err := OpenDefault()
			if err != nil {
				b.Fatal(err)
			}
			benchLookup(b, db, netip.MustParseAddr(bc.addr))
		})
	}
	b.Run("geolite2-city-subset", func(b *testing.B) {
		db := openShared(b, OpenOptions{}, "geoip", "GeoLite2-City-20191224-subset-1Mcities.mmdb")
		benchLookup(b, db, netip.MustParseAddr("17.93.200.1"))
	})
	b.Run("geolite2-country", func(b *testing.B) {
		db := openShared(b, OpenOptions{}, "geoip", "GeoLite2-Country-20191224.mmdb")
		benchLookup(b, db, netip.MustParseAddr("8.8.8.8"))
	})
}

func benchLookup(b *testing.B, db *DB, a netip.Addr) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.Lookup(a); err != nil {
			b.Fatal(err)
		}
	}
}

// A missing file says "open PATH" once, and still wraps fs.ErrNotExist.
func TestOpenMissingFileSaysPathOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "none.mmdb")
	_, err := Open(p, OpenOptions{})
	if err == nil || strings.Count(err.Error(), p) != 1 || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v", err)
	}
}

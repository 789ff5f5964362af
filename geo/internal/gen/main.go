// Command gen writes the small GeoIP2-City-format database that the geo
// package embeds for development and demos (see geo/README.md).
//
// Two kinds of records go in: demo records for documentation, benchmarking
// and loopback ranges, made up for this project, and a few records copied
// from MaxMind's test databases (MIT or Apache-2.0, see
// default-city.NOTICE). The output is deterministic: the build epoch is
// fixed, so regenerating an unchanged table gives the same bytes.
//
// Usage (from the geo directory, via go generate):
//
//	go run ./internal/gen -o default-city.mmdb
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// buildEpoch is fixed so that the output is reproducible (2025-01-01 UTC).
const buildEpoch = 1735689600

// area is a named place with a code and a geoname id: a continent, a country,
// a subdivision or a city (a city has no code).
type area struct {
	code string
	id   uint
	name string
}

// record is what one or more networks map to.
type record struct {
	nets         []string
	continent    area
	country      *area
	registered   *area
	subdivisions []area
	city         *area
	lat, lon     float64
	radius       uint16
	timeZone     string
}

var (
	af = area{"AF", 6255146, "Africa"}
	as = area{"AS", 6255147, "Asia"}
	eu = area{"EU", 6255148, "Europe"}
	na = area{"NA", 6255149, "North America"}
	sa = area{"SA", 6255150, "South America"}
	oc = area{"OC", 6255151, "Oceania"}

	au = &area{"AU", 2077456, "Australia"}
	br = &area{"BR", 3469034, "Brazil"}
	bt = &area{"BT", 1252634, "Bhutan"}
	cn = &area{"CN", 1814991, "China"}
	de = &area{"DE", 2921044, "Germany"}
	fr = &area{"FR", 3017382, "France"}
	gb = &area{"GB", 2635167, "United Kingdom"}
	jp = &area{"JP", 1861060, "Japan"}
	nl = &area{"NL", 2750405, "Netherlands"}
	ro = &area{"RO", 798549, "Romania"}
	se = &area{"SE", 2661886, "Sweden"}
	sg = &area{"SG", 1880251, "Singapore"}
	us = &area{"US", 6252001, "United States"}
	za = &area{"ZA", 953987, "South Africa"}
)

// demo records: documentation (RFC 5737, RFC 3849), benchmarking (RFC 2544)
// and loopback ranges, so that a dev mesh can pretend a viewer is anywhere.
// 127.0.0.0/24 stays empty: a plain local client has no location.
var demo = []record{
	{
		nets:      []string{"192.0.2.0/24", "198.18.1.0/24", "127.0.1.0/24", "2001:db8:1::/48"},
		continent: eu, country: de, registered: de,
		subdivisions: []area{{"BE", 0, "Land Berlin"}},
		city:         &area{"", 2950159, "Berlin"},
		lat:          52.52437, lon: 13.41053, radius: 20, timeZone: "Europe/Berlin",
	},
	{
		nets:      []string{"198.51.100.0/24", "198.18.2.0/24", "127.0.2.0/24", "2001:db8:2::/48"},
		continent: na, country: us, registered: us,
		subdivisions: []area{{"NY", 0, "New York"}},
		city:         &area{"", 5128581, "New York City"},
		lat:          40.71427, lon: -74.00597, radius: 20, timeZone: "America/New_York",
	},
	{
		nets:      []string{"203.0.113.0/24", "198.18.3.0/24", "127.0.3.0/24", "2001:db8:3::/48"},
		continent: as, country: jp, registered: jp,
		subdivisions: []area{{"13", 0, "Tokyo"}},
		city:         &area{"", 1850147, "Tokyo"},
		lat:          35.6895, lon: 139.69171, radius: 20, timeZone: "Asia/Tokyo",
	},
	{
		nets:      []string{"198.18.4.0/24", "127.0.4.0/24", "2001:db8:4::/48"},
		continent: sa, country: br, registered: br,
		subdivisions: []area{{"SP", 0, "São Paulo"}},
		city:         &area{"", 3448439, "São Paulo"},
		lat:          -23.5475, lon: -46.63611, radius: 20, timeZone: "America/Sao_Paulo",
	},
	{
		nets:      []string{"198.18.5.0/24", "127.0.5.0/24", "2001:db8:5::/48"},
		continent: af, country: za, registered: za,
		subdivisions: []area{{"GP", 0, "Gauteng"}},
		city:         &area{"", 993800, "Johannesburg"},
		lat:          -26.20227, lon: 28.04363, radius: 20, timeZone: "Africa/Johannesburg",
	},
	{
		nets:      []string{"198.18.6.0/24", "127.0.6.0/24", "2001:db8:6::/48"},
		continent: oc, country: au, registered: au,
		subdivisions: []area{{"NSW", 0, "New South Wales"}},
		city:         &area{"", 2147714, "Sydney"},
		lat:          -33.86785, lon: 151.20732, radius: 20, timeZone: "Australia/Sydney",
	},
	{ // country only: exercises the country level of the fallback chain
		nets:      []string{"198.18.7.0/24", "127.0.7.0/24"},
		continent: eu, country: fr, registered: fr,
		lat: 46, lon: 2, radius: 500, timeZone: "Europe/Paris",
	},
	{ // registered country only, as some real networks are
		nets:      []string{"198.18.8.0/24", "127.0.8.0/24"},
		continent: eu, registered: nl,
	},
}

// maxmindTest records are copied from MaxMind's GeoIP2-City-Test source
// data (English names only).
var maxmindTest = []record{
	{
		nets:      []string{"81.2.69.142/31", "81.2.69.144/28", "81.2.69.160/27", "81.2.69.192/28"},
		continent: eu, country: gb, registered: us,
		subdivisions: []area{{"ENG", 6269131, "England"}},
		city:         &area{"", 2643743, "London"},
		lat:          51.5142, lon: -0.0931, radius: 100, timeZone: "Europe/London",
	},
	{
		nets:      []string{"2.125.160.216/29"},
		continent: eu, country: gb, registered: fr,
		subdivisions: []area{{"ENG", 6269131, "England"}, {"WBK", 3333217, "West Berkshire"}},
		city:         &area{"", 2655045, "Boxford"},
		lat:          51.75, lon: -1.25, radius: 100, timeZone: "Europe/London",
	},
	{
		nets:      []string{"89.160.20.112/28", "89.160.20.128/25"},
		continent: eu, country: se, registered: de,
		subdivisions: []area{{"E", 2685867, "Östergötland County"}},
		city:         &area{"", 2694762, "Linköping"},
		lat:          58.4167, lon: 15.6167, radius: 76, timeZone: "Europe/Stockholm",
	},
	{
		nets:      []string{"216.160.83.56/29"},
		continent: na, country: us, registered: gb,
		subdivisions: []area{{"WA", 5815135, "Washington"}},
		city:         &area{"", 5803556, "Milton"},
		lat:          47.2513, lon: -122.3149, radius: 22, timeZone: "America/Los_Angeles",
	},
	{
		nets:      []string{"214.78.120.0/22", "2001:480:10::/48"},
		continent: na, country: us, registered: us,
		subdivisions: []area{{"CA", 5332921, "California"}},
		city:         &area{"", 5391811, "San Diego"},
		lat:          32.7405, lon: -117.0935, radius: 100, timeZone: "America/Los_Angeles",
	},
	{
		nets:      []string{"175.16.199.0/24"},
		continent: as, country: cn, registered: cn,
		subdivisions: []area{{"22", 2036500, "Jilin Sheng"}},
		city:         &area{"", 2038180, "Changchun"},
		lat:          43.88, lon: 125.3228, radius: 100, timeZone: "Asia/Harbin",
	},
	{
		nets:      []string{"214.0.0.0/24"},
		continent: as, country: sg, registered: sg,
		city: &area{"", 1880252, "Singapore"},
		lat:  1.336, lon: 103.7716, radius: 10, timeZone: "Asia/Singapore",
	},
	{
		nets:      []string{"214.0.1.0/24"},
		continent: oc, country: au, registered: au,
		subdivisions: []area{{"VIC", 2145234, "Victoria"}},
		city:         &area{"", 2158177, "Melbourne"},
		lat:          -37.8159, lon: 144.9669, radius: 20, timeZone: "Australia/Melbourne",
	},
	{
		nets:      []string{"67.43.156.0/24"},
		continent: as, country: bt, registered: ro,
		lat: 27.5, lon: 90.5, radius: 534, timeZone: "Asia/Thimphu",
	},
	{
		nets:      []string{"2001:218::/32"},
		continent: as, country: jp, registered: jp,
		lat: 35.68536, lon: 139.75309, radius: 100, timeZone: "Asia/Tokyo",
	},
	{ // continent only, no country at all
		nets:      []string{"2a02:d500::/29"},
		continent: eu,
		lat:       48.69096, lon: 9.14062, radius: 100, timeZone: "Europe/Vaduz",
	},
}

func names(s string) mmdbtype.Map {
	return mmdbtype.Map{"en": mmdbtype.String(s)}
}

func (a area) value(withCode string) mmdbtype.Map {
	m := mmdbtype.Map{"names": names(a.name)}
	if a.id != 0 {
		m["geoname_id"] = mmdbtype.Uint32(a.id)
	}
	if a.code != "" {
		m[mmdbtype.String(withCode)] = mmdbtype.String(a.code)
	}
	return m
}

func (r record) value() mmdbtype.Map {
	m := mmdbtype.Map{"continent": r.continent.value("code")}
	if r.country != nil {
		m["country"] = r.country.value("iso_code")
	}
	if r.registered != nil {
		m["registered_country"] = r.registered.value("iso_code")
	}
	if len(r.subdivisions) > 0 {
		subs := make(mmdbtype.Slice, 0, len(r.subdivisions))
		for _, s := range r.subdivisions {
			subs = append(subs, s.value("iso_code"))
		}
		m["subdivisions"] = subs
	}
	if r.city != nil {
		m["city"] = r.city.value("")
	}
	if r.radius != 0 {
		m["location"] = mmdbtype.Map{
			"latitude":        mmdbtype.Float64(r.lat),
			"longitude":       mmdbtype.Float64(r.lon),
			"accuracy_radius": mmdbtype.Uint16(r.radius),
			"time_zone":       mmdbtype.String(r.timeZone),
		}
	}
	return m
}

func build() ([]byte, error) {
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            "GeoIP2-City",
		RecordSize:              24,
		IncludeReservedNetworks: true,
		BuildEpoch:              buildEpoch,
		Languages:               []string{"en"},
		Description: map[string]string{
			"en": "relaymesh development database: demo ranges and MaxMind test records",
		},
	})
	if err != nil {
		return nil, err
	}
	for _, set := range [][]record{demo, maxmindTest} {
		for _, r := range set {
			v := r.value()
			for _, n := range r.nets {
				_, ipnet, err := net.ParseCIDR(n)
				if err != nil {
					return nil, fmt.Errorf("network %q: %w", n, err)
				}
				if err := tree.Insert(ipnet, v); err != nil {
					return nil, fmt.Errorf("insert %s: %w", n, err)
				}
			}
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func main() {
	out := flag.String("o", "default-city.mmdb", "output file")
	flag.Parse()
	data, err := build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

package geo

import (
	"strings"
	"testing"
)

func testMatcher(t testing.TB) *Matcher {
	t.Helper()
	m, err := NewMatcher([]Rule{
		{Vertex: "london", GeonameID: 2643743},
		{Vertex: "us-west", Country: "US", Subdivision: "CA"},
		{Vertex: "us-west", Subdivision: "us-wa"}, // full ISO 3166-2, lower case
		{Vertex: "gb", Country: "GB"},
		{Vertex: "us", Country: "us"},
		{Vertex: "ro", Country: "RO"},
		{Vertex: "eu", Continent: "EU"},
		{Vertex: "as", Continent: "AS"},
		{Vertex: "eu", Continent: "EU"}, // repeated with the same vertex: fine
	}, "world")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMatchChain(t *testing.T) {
	m := testMatcher(t)
	cases := []struct {
		name        string
		loc         Location
		vertex, lvl string
	}{
		{"city", Location{Country: "GB", Subdivision: "ENG", GeonameID: 2643743, Continent: "EU"}, "london", LevelCity},
		{"unknown city falls to country", Location{Country: "GB", Subdivision: "ENG", GeonameID: 2655045, Continent: "EU"}, "gb", LevelCountry},
		{"subdivision", Location{Country: "US", Subdivision: "CA", GeonameID: 5391811, Continent: "NA"}, "us-west", LevelSubdivision},
		{"subdivision given as US-WA", Location{Country: "US", Subdivision: "WA", Continent: "NA"}, "us-west", LevelSubdivision},
		{"same subdivision code, other country", Location{Country: "CA", Subdivision: "WA", Continent: "NA"}, "world", LevelDefault},
		{"country", Location{Country: "US", Subdivision: "NY", Continent: "NA"}, "us", LevelCountry},
		{"country wins over registered country", Location{Country: "BT", RegisteredCountry: "RO", Continent: "AS"}, "as", LevelContinent},
		{"registered country when country unknown", Location{RegisteredCountry: "RO", Continent: "EU"}, "ro", LevelRegisteredCountry},
		{"subdivision of the registered country", Location{RegisteredCountry: "US", Subdivision: "CA"}, "us-west", LevelSubdivision},
		{"continent", Location{Country: "FR", Continent: "EU"}, "eu", LevelContinent},
		{"continent only", Location{Continent: "EU"}, "eu", LevelContinent},
		{"default", Location{Country: "BR", Continent: "SA"}, "world", LevelDefault},
		{"empty", Location{Reserved: true}, "world", LevelDefault},
	}
	for _, c := range cases {
		v, l := m.Match(c.loc)
		if v != c.vertex || l != c.lvl {
			t.Errorf("%s: Match(%+v) = %q, %q; want %q, %q", c.name, c.loc, v, l, c.vertex, c.lvl)
		}
	}
	if m.Default() != "world" {
		t.Errorf("Default() = %q", m.Default())
	}

	none, err := NewMatcher(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if v, l := none.Match(Location{Country: "GB"}); v != "" || l != LevelNone {
		t.Errorf("empty matcher: %q, %q", v, l)
	}
}

func TestNewMatcherErrors(t *testing.T) {
	cases := []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{{Country: "DE"}}, "no vertex"},
		{[]Rule{{Vertex: "x"}}, "no criterion"},
		{[]Rule{{Vertex: "x", Subdivision: "CA"}}, "needs a country"},
		{[]Rule{{Vertex: "x", Country: "DE", Subdivision: "US-CA"}}, "not in country"},
		{[]Rule{{Vertex: "x", Country: "DEU"}}, "alpha-2"},
		{[]Rule{{Vertex: "x", Country: "D!"}}, "alpha-2"},
		{[]Rule{{Vertex: "x", Country: "US", Subdivision: "TOOLONG"}}, "subdivision"},
		{[]Rule{{Vertex: "x", Continent: "Europe"}}, "continent"},
		{[]Rule{{Vertex: "a", Country: "DE"}, {Vertex: "b", Country: "de"}}, `rule 1 (vertex "b"): country DE already maps to vertex "a"`},
		{[]Rule{{Vertex: "a", GeonameID: 1}, {Vertex: "b", GeonameID: 1}}, "geoname id 1 already maps"},
	}
	for _, c := range cases {
		_, err := NewMatcher(c.rules, "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewMatcher(%+v): err = %v, want it to mention %q", c.rules, err, c.want)
		}
	}
}

func TestMatchAllocatesNothing(t *testing.T) {
	m := testMatcher(t)
	locs := []Location{
		{Country: "GB", GeonameID: 2643743},
		{Country: "US", Subdivision: "CA", GeonameID: 1},
		{RegisteredCountry: "RO", Subdivision: "B"},
		{Country: "BR", Continent: "SA"},
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, l := range locs {
			m.Match(l)
		}
	}); n != 0 {
		t.Errorf("Match allocates %v times", n)
	}
}

func BenchmarkMatch(b *testing.B) {
	m := testMatcher(b)
	for _, bc := range []struct {
		name string
		loc  Location
	}{
		{"city", Location{Country: "GB", Subdivision: "ENG", GeonameID: 2643743, Continent: "EU"}},
		{"subdivision", Location{Country: "US", Subdivision: "CA", GeonameID: 5391811, Continent: "NA"}},
		{"continent", Location{Country: "FR", Subdivision: "IDF", GeonameID: 2988507, Continent: "EU"}},
		{"default", Location{Country: "BR", Subdivision: "SP", GeonameID: 3448439, Continent: "SA"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Match(bc.loc)
			}
		})
	}
}

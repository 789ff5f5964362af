package geo

import _ "embed"

//go:generate go run ./internal/gen -o default-city.mmdb

// defaultCity is the small development database; see README.md for the
// addresses it knows and default-city.NOTICE for the origin of its records.
//
//go:embed default-city.mmdb
var defaultCity []byte

// DefaultName is the name of the embedded database in errors and logs.
const DefaultName = "embedded default-city.mmdb"

// OpenDefault opens the small GeoIP2-City-format database embedded in the
// binary, for development and demos: documentation, benchmarking and
// loopback ranges placed on six continents, and a few records from
// MaxMind's test data. It is not a real GeoIP database.
func OpenDefault() (*DB, error) {
	return OpenBytes(defaultCity, DefaultName, OpenOptions{Verify: true})
}

package geo

import "encoding/json"

// Location is what the database knows about an address. Codes are as MaxMind
// stores them: ISO 3166-1 alpha-2 country codes ("GB"), the part of an ISO
// 3166-2 code after the country ("ENG", "CA"), two-letter continent codes
// ("EU", "NA"). Empty fields are unknown.
type Location struct {
	// Country is where the address is believed to be.
	Country string
	// RegisteredCountry is where the network is registered; the Matcher
	// uses it when Country is empty.
	RegisteredCountry string
	// Continent is the continent code.
	Continent string
	// Subdivision is the first (largest) subdivision's ISO code.
	Subdivision string
	// City is the English city name.
	City string
	// GeonameID is the city's GeoNames id (0 when the city is unknown).
	GeonameID uint
	// Latitude and Longitude are meaningful only when HasCoordinates.
	Latitude, Longitude float64
	// HasCoordinates reports whether the database gave both coordinates.
	HasCoordinates bool
	// AccuracyRadius is the radius in km around the coordinates.
	AccuracyRadius uint16
	// Found reports whether the database had any data for the address.
	Found bool
	// Reserved reports a private, loopback, link-local, documentation or
	// other special-purpose address. Real databases have no data for these,
	// so such a Location is normally empty; it is not an error.
	Reserved bool
}

// EffectiveCountry is Country, or RegisteredCountry when Country is unknown.
func (l Location) EffectiveCountry() string {
	if l.Country != "" {
		return l.Country
	}
	return l.RegisteredCountry
}

// LocationJSON is the JSON form of a Location: snake_case names, absent
// coordinates as null. Tools that print a Location beside fields of their
// own embed it.
type LocationJSON struct {
	Country           string   `json:"country"`
	RegisteredCountry string   `json:"registered_country"`
	Continent         string   `json:"continent"`
	Subdivision       string   `json:"subdivision"`
	City              string   `json:"city"`
	GeonameID         uint     `json:"geoname_id"`
	Latitude          *float64 `json:"latitude"`
	Longitude         *float64 `json:"longitude"`
	AccuracyRadius    uint16   `json:"accuracy_radius"`
	Found             bool     `json:"found"`
	Reserved          bool     `json:"reserved"`
}

// JSON returns the Location's JSON form.
func (l Location) JSON() LocationJSON {
	j := LocationJSON{
		Country: l.Country, RegisteredCountry: l.RegisteredCountry,
		Continent: l.Continent, Subdivision: l.Subdivision, City: l.City,
		GeonameID: l.GeonameID, AccuracyRadius: l.AccuracyRadius,
		Found: l.Found, Reserved: l.Reserved,
	}
	if l.HasCoordinates {
		lat, lon := l.Latitude, l.Longitude
		j.Latitude, j.Longitude = &lat, &lon
	}
	return j
}

// MarshalJSON writes the Location with snake_case keys and null coordinates
// when the database gave none.
func (l Location) MarshalJSON() ([]byte, error) { return json.Marshal(l.JSON()) }

// Package geo locates viewers: it turns an IP address into a Location with a
// MaxMind GeoIP2/GeoLite2 City or Country database, and a Location into a
// vertex of the operator's location graph with a Matcher.
//
// The package is pure: no sockets, no knowledge of the topology package. The
// graph hands its match rules over as a []Rule; the redirector asks a Locator
// (a *DB or a *Reloader, which swaps in a new database when its file
// changes) and then the Matcher.
//
// A small City database for development and demos is embedded in the binary
// and opened with OpenDefault; README.md lists the addresses it knows.
package geo

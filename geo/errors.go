package geo

import "errors"

// Errors returned by Open, OpenBytes and DB.Lookup wrap one of these (test
// with errors.Is); a missing file wraps fs.ErrNotExist instead.
var (
	// ErrInvalidDatabase means the data is not a readable MaxMind database:
	// a damaged file, or one whose corruption shows only on lookup.
	ErrInvalidDatabase = errors.New("invalid MaxMind database")
	// ErrWrongDatabaseType means the file is a MaxMind database of a kind
	// that has no location data (ASN, anonymous IP, connection type…).
	ErrWrongDatabaseType = errors.New("database has no location data (want a City or Country database)")
	// ErrTooLarge means a file is larger than the configured limit.
	ErrTooLarge = errors.New("file too large")
	// ErrInvalidAddress means the address given to Lookup is the zero netip.Addr.
	ErrInvalidAddress = errors.New("invalid IP address")
)

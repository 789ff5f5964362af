package geo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"time"

	geoip2 "github.com/oschwald/geoip2-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2"
)

// DefaultMaxSize is the largest database file Open reads unless told
// otherwise: comfortably above a full GeoIP2 City database.
const DefaultMaxSize = 1 << 30

// OpenOptions tunes Open and OpenBytes. The zero value is ready to use.
type OpenOptions struct {
	// MaxSize bounds the file size in bytes. Default DefaultMaxSize.
	MaxSize int64
	// Verify walks the whole database after opening and rejects it when any
	// part is damaged. It finds corruption that otherwise shows only on some
	// lookups, at the cost of time proportional to the file size (about
	// a fifth of a second for a 4 MB Country database, seconds for a full
	// City one). It is stricter than the format: it also wants metadata such as
	// a description, which real MaxMind files always have. Default false;
	// the Reloader turns it on.
	Verify bool
}

// probe is looked up right after opening: it makes the database type check
// and catches some corruption before the first viewer arrives.
var probe = netip.MustParseAddr("81.2.69.142")

// DB is an open City or Country database. It is safe for concurrent use and
// holds the whole file in memory, so replacing the file on disk never
// affects it.
type DB struct {
	reader *geoip2.Reader
	name   string
	meta   maxminddb.Metadata
}

// Metadata describes an open database.
type Metadata struct {
	// Type is the MaxMind database type, e.g. "GeoLite2-City".
	Type string
	// BuildTime is when the database was built.
	BuildTime time.Time
	// NodeCount is the number of nodes in the search tree.
	NodeCount uint
	// IPVersion is 4 or 6.
	IPVersion uint
}

// Open reads the database file at path into memory and opens it. Errors
// wrap fs.ErrNotExist, ErrTooLarge, ErrInvalidDatabase or
// ErrWrongDatabaseType.
func Open(path string, opts OpenOptions) (*DB, error) {
	data, err := readBounded(path, opts.maxSize())
	if err != nil {
		// os errors carry "open PATH" already: say it once.
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Path == path {
			err = pe.Err
		}
		return nil, fmt.Errorf("geo: open %s: %w", path, err)
	}
	return openBytes(data, path, opts)
}

// OpenBytes opens a database held in memory; name appears in errors. The
// slice must not change while the DB is in use.
func OpenBytes(data []byte, name string, opts OpenOptions) (*DB, error) {
	if int64(len(data)) > opts.maxSize() {
		return nil, fmt.Errorf("geo: open %s: %w (%d bytes, limit %d)", name, ErrTooLarge, len(data), opts.maxSize())
	}
	return openBytes(data, name, opts)
}

func (o OpenOptions) maxSize() int64 {
	if o.MaxSize > 0 {
		return o.MaxSize
	}
	return DefaultMaxSize
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w (%d bytes, limit %d)", ErrTooLarge, st.Size(), limit)
	}
	// The file may grow between Stat and the read: read at most limit+1.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w (limit %d)", ErrTooLarge, limit)
	}
	return data, nil
}

func openBytes(data []byte, name string, opts OpenOptions) (db *DB, err error) {
	defer func() {
		// A hostile file must never take the process down: the readers
		// are well tested, but this is the boundary to untrusted data.
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("geo: open %s: %w: %v", name, ErrInvalidDatabase, r)
		}
	}()
	if len(data) == 0 {
		return nil, fmt.Errorf("geo: open %s: %w: file is empty", name, ErrInvalidDatabase)
	}
	reader, err := geoip2.OpenBytes(data)
	if err != nil {
		var unknown geoip2.UnknownDatabaseTypeError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("geo: open %s: %w: type %q", name, ErrWrongDatabaseType, unknown.DatabaseType)
		}
		return nil, fmt.Errorf("geo: open %s: %w: %w", name, ErrInvalidDatabase, err)
	}
	db = &DB{reader: reader, name: name, meta: reader.Metadata()}
	if _, err := reader.City(probe); err != nil {
		var wrong geoip2.InvalidMethodError
		if errors.As(err, &wrong) {
			return nil, fmt.Errorf("geo: open %s: %w: type %q", name, ErrWrongDatabaseType, wrong.DatabaseType)
		}
		return nil, fmt.Errorf("geo: open %s: %w: probe lookup: %w", name, ErrInvalidDatabase, err)
	}
	if opts.Verify {
		mm, err := maxminddb.OpenBytes(data)
		if err == nil {
			err = mm.Verify()
		}
		if err != nil {
			return nil, fmt.Errorf("geo: open %s: %w: verify: %w", name, ErrInvalidDatabase, err)
		}
	}
	return db, nil
}

// Name is the file name (or the name given to OpenBytes).
func (db *DB) Name() string { return db.name }

// Metadata describes the database.
func (db *DB) Metadata() Metadata {
	return Metadata{
		Type:      db.meta.DatabaseType,
		BuildTime: db.meta.BuildTime().UTC(),
		NodeCount: db.meta.NodeCount,
		IPVersion: db.meta.IPVersion,
	}
}

// Lookup locates addr. An address the database does not know gives a
// Location with Found false and no error; a special-purpose address
// (IsReserved) is flagged Reserved. Errors wrap ErrInvalidAddress or
// ErrInvalidDatabase (damage that shows only on lookup).
func (db *DB) Lookup(addr netip.Addr) (loc Location, err error) {
	if !addr.IsValid() {
		return Location{}, fmt.Errorf("geo: lookup: %w", ErrInvalidAddress)
	}
	addr = addr.Unmap().WithZone("")
	defer func() {
		if r := recover(); r != nil {
			loc, err = Location{}, fmt.Errorf("geo: lookup %s in %s: %w: %v", addr, db.name, ErrInvalidDatabase, r)
		}
	}()
	rec, err := db.reader.City(addr)
	if err != nil {
		return Location{}, fmt.Errorf("geo: lookup %s in %s: %w: %w", addr, db.name, ErrInvalidDatabase, err)
	}
	loc.Reserved = IsReserved(addr)
	if !rec.HasData() {
		return loc, nil
	}
	loc.Found = true
	loc.Country = rec.Country.ISOCode
	loc.RegisteredCountry = rec.RegisteredCountry.ISOCode
	loc.Continent = rec.Continent.Code
	if len(rec.Subdivisions) > 0 {
		loc.Subdivision = rec.Subdivisions[0].ISOCode
	}
	loc.City = rec.City.Names.English
	loc.GeonameID = rec.City.GeoNameID
	if rec.Location.HasCoordinates() {
		loc.HasCoordinates = true
		loc.Latitude, loc.Longitude = *rec.Location.Latitude, *rec.Location.Longitude
	}
	loc.AccuracyRadius = rec.Location.AccuracyRadius
	return loc, nil
}

// Locator is anything that locates addresses: a *DB or a *Reloader.
type Locator interface {
	Lookup(addr netip.Addr) (Location, error)
}

var (
	_ Locator = (*DB)(nil)
	_ Locator = (*Reloader)(nil)
)

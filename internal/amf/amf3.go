package amf

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	amf0 "github.com/yutopp/go-amf0"
)

// AMF3 values (AMF 3 specification, January 2013) reach the reader through
// the AMF0 avmplus marker 0x11: Flash Player and AIR clients connected with
// objectEncoding 3 mark every argument of a command (message type 17), data
// message (15) or shared-object event (16) that way. ReadValue accepts the
// marker wherever an AMF0 value may be, at the top level or nested.
//
// Go values, the same types the AMF0 side produces:
//
//	undefined                      Undefined as a top-level value, nil nested
//	null                           nil
//	false, true                    bool
//	integer, double                float64 (so amf.Number sees one numeric type)
//	string, XMLDocument, XML       string
//	Date                           time.Time (UTC, whole milliseconds)
//	Array, dense part only         []any
//	Array with associative part    amf0.ECMAArray (AMF0's type for an ActionScript
//	                               Array with named members); dense elements
//	                               join it under the keys "0", "1", ...
//	Object (sealed and dynamic)    map[string]any; the class name is dropped
//	ByteArray                      []byte (a copy)
//	Vector.<int/uint/Number>       []any of float64
//	Vector.<Object>                []any
//	Dictionary                     map[string]any; keys that are strings,
//	                               numbers, booleans or null become strings as
//	                               ActionScript prints them, other keys are an
//	                               ErrAMF3 error
//	externalizable object          flex.messaging.io.ArrayCollection and
//	                               flex.messaging.io.ObjectProxy decode as the
//	                               one value they wrap; any other class is an
//	                               ErrAMF3 error (its body cannot be skipped)
//
// Reference tables: each avmplus-marked value starts with fresh string,
// object and traits tables, as the specification's NetConnection usage
// describes for a top-level value.
//
// Hostile input: every length and count is checked against the bytes that
// remain, every reference index against its table, and nesting against the
// same maxDepth as AMF0. A reference to an object, array, vector, dictionary
// or externalizable wrapper that is still being decoded (a cycle) is an
// error: the result never contains a cycle, so code walking it terminates. A
// reference to a completed value shares its Go value (maps and slices are
// not copied), and counts as a copy of it against an expansion budget: the
// decoded value, fully expanded (roughly its size written out as AMF0), may
// not exceed expansionFactor times the bytes read, so references cannot turn
// a small message into a huge value for whoever re-encodes or walks it.

// AMF3 type markers (section 3.1).
const (
	m3Undefined    = 0x00
	m3Null         = 0x01
	m3False        = 0x02
	m3True         = 0x03
	m3Integer      = 0x04
	m3Double       = 0x05
	m3String       = 0x06
	m3XMLDoc       = 0x07
	m3Date         = 0x08
	m3Array        = 0x09
	m3Object       = 0x0a
	m3XML          = 0x0b
	m3ByteArray    = 0x0c
	m3VectorInt    = 0x0d
	m3VectorUint   = 0x0e
	m3VectorDouble = 0x0f
	m3VectorObject = 0x10
	m3Dictionary   = 0x11
)

const (
	maxU29   = 1<<29 - 1
	minInt29 = -(1 << 28)
	maxInt29 = 1<<28 - 1
	maxLen29 = 1<<28 - 1 // the largest length or count a U29 with its flag bit holds

	// expansionFactor and expansionSlack bound the expanded size of a
	// decoded AMF3 value: at most expansionFactor units per byte read plus
	// expansionSlack. A unit is roughly one byte of the value written out
	// as AMF0 without references; legitimate values stay well below 32 (a
	// typed object sent by traits reference repeats its member names, about
	// ten times its bytes for typical names).
	expansionFactor = 32
	expansionSlack  = 64
)

// Well-known externalizable classes that wrap exactly one AMF3 value.
const (
	classArrayCollection = "flex.messaging.io.ArrayCollection"
	classObjectProxy     = "flex.messaging.io.ObjectProxy"
)

type amf3Traits struct {
	class   string
	members []string // sealed member names, in wire order
	dynamic bool
	ext     bool // externalizable: the class reads its own body
	cost    int  // expansion units of the member names, spent again per use by reference
}

// amf3Object is an entry of the object table.
type amf3Object struct {
	v    any
	cost int  // expansion units of the whole value, spent again per reference
	done bool // false while the value is being decoded
}

type amf3Decoder struct {
	b        []byte
	off      int
	maxDepth int
	cost     int
	strs     []string
	objs     []amf3Object
	traits   []*amf3Traits
}

// readAMF3 decodes the AMF3 value at the start of b (the bytes after an
// avmplus marker) with fresh reference tables. depth is the AMF0 nesting
// level of the marker.
func readAMF3(b []byte, depth, maxDepth int) (any, int, error) {
	d := amf3Decoder{b: b, maxDepth: maxDepth}
	v, err := d.value(depth)
	if err != nil {
		return nil, 0, err
	}
	return v, d.off, nil
}

func malformed3(format string, args ...any) error {
	return Malformed("AMF3 "+format, args...)
}

// spend adds n expansion units and enforces the budget.
func (d *amf3Decoder) spend(n int) error {
	d.cost += n
	if d.cost > expansionFactor*d.off+expansionSlack {
		return malformed3("value expands beyond %d times its %d bytes through references", expansionFactor, d.off)
	}
	return nil
}

func (d *amf3Decoder) rest() int { return len(d.b) - d.off }

func (d *amf3Decoder) byte1() (byte, error) {
	if d.off >= len(d.b) {
		return 0, malformed3("truncated value")
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

// u29 reads a variable-length unsigned 29-bit integer (section 1.3.1).
func (d *amf3Decoder) u29() (uint32, error) {
	var v uint32
	for i := 0; i < 4; i++ {
		if d.off >= len(d.b) {
			return 0, malformed3("truncated U29")
		}
		c := d.b[d.off]
		d.off++
		if i == 3 {
			return v<<8 | uint32(c), nil
		}
		v = v<<7 | uint32(c&0x7f)
		if c&0x80 == 0 {
			break
		}
	}
	return v, nil
}

func (d *amf3Decoder) double() (float64, error) {
	if d.rest() < 8 {
		return 0, malformed3("truncated double")
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return f, nil
}

// utf8Bytes reads n bytes of UTF-8.
func (d *amf3Decoder) utf8Bytes(n uint32) (string, error) {
	if uint64(n) > uint64(d.rest()) {
		return "", malformed3("string of %d bytes truncated", n)
	}
	raw := d.b[d.off : d.off+int(n)]
	if !utf8.Valid(raw) {
		return "", malformed3("string is not UTF-8")
	}
	d.off += int(n)
	return string(raw), nil
}

// str reads a UTF-8-vr: an inline string or a string-table reference.
func (d *amf3Decoder) str() (string, error) {
	u, err := d.u29()
	if err != nil {
		return "", err
	}
	if u&1 == 0 {
		i := u >> 1
		if uint64(i) >= uint64(len(d.strs)) {
			return "", malformed3("string reference %d of %d", i, len(d.strs))
		}
		s := d.strs[i]
		return s, d.spend(len(s) + 3)
	}
	s, err := d.utf8Bytes(u >> 1)
	if err != nil {
		return "", err
	}
	if s != "" { // the empty string is never sent by reference
		d.strs = append(d.strs, s)
	}
	return s, d.spend(len(s) + 3)
}

// header reads the U29 that starts every object-table type: a reference
// (low bit 0), resolved here, or the type's inline bits (the U29 shifted
// right by one).
func (d *amf3Decoder) header() (ref any, bits uint32, isRef bool, err error) {
	u, err := d.u29()
	if err != nil {
		return nil, 0, false, err
	}
	if u&1 == 1 {
		return nil, u >> 1, false, nil
	}
	i := u >> 1
	if uint64(i) >= uint64(len(d.objs)) {
		return nil, 0, true, malformed3("object reference %d of %d", i, len(d.objs))
	}
	o := d.objs[i]
	if !o.done {
		return nil, 0, true, malformed3("reference %d to an object still being decoded (cyclic references are not supported)", i)
	}
	return o.v, 0, true, d.spend(o.cost)
}

// open adds a placeholder to the object table for a value whose members
// are about to be read; close completes it. start is d.cost before the
// value spent anything.
func (d *amf3Decoder) open() int {
	d.objs = append(d.objs, amf3Object{})
	return len(d.objs) - 1
}

func (d *amf3Decoder) close(i int, v any, start int) {
	d.objs[i] = amf3Object{v: v, cost: d.cost - start, done: true}
}

// leaf adds a value without members to the object table.
func (d *amf3Decoder) leaf(v any, cost int) (any, error) {
	start := d.cost
	if err := d.spend(cost); err != nil {
		return nil, err
	}
	d.close(d.open(), v, start)
	return v, nil
}

func (d *amf3Decoder) value(depth int) (any, error) {
	if depth > d.maxDepth {
		return nil, malformed("values nested deeper than %d", d.maxDepth)
	}
	m, err := d.byte1()
	if err != nil {
		return nil, err
	}
	switch m {
	case m3Undefined:
		if depth > 0 {
			return nil, d.spend(1)
		}
		return Undefined{}, d.spend(1)
	case m3Null:
		return nil, d.spend(1)
	case m3False:
		return false, d.spend(2)
	case m3True:
		return true, d.spend(2)
	case m3Integer:
		u, err := d.u29()
		if err != nil {
			return nil, err
		}
		i := int32(u)
		if u&0x10000000 != 0 { // sign-extend the 29-bit two's complement
			i -= 1 << 29
		}
		return float64(i), d.spend(9)
	case m3Double:
		f, err := d.double()
		if err != nil {
			return nil, err
		}
		return f, d.spend(9)
	case m3String:
		return d.str()
	case m3XMLDoc, m3XML:
		return d.xml()
	case m3Date:
		return d.date()
	case m3Array:
		return d.array(depth)
	case m3Object:
		return d.object(depth)
	case m3ByteArray:
		return d.byteArray()
	case m3VectorInt, m3VectorUint, m3VectorDouble:
		return d.numberVector(m)
	case m3VectorObject:
		return d.objectVector(depth)
	case m3Dictionary:
		return d.dictionary(depth)
	}
	return nil, malformed3("unknown marker 0x%02x", m)
}

func (d *amf3Decoder) xml() (any, error) {
	ref, n, isRef, err := d.header()
	if isRef || err != nil {
		return ref, err
	}
	s, err := d.utf8Bytes(n)
	if err != nil {
		return nil, err
	}
	return d.leaf(s, len(s)+5)
}

func (d *amf3Decoder) date() (any, error) {
	ref, _, isRef, err := d.header() // the inline bits are unused
	if isRef || err != nil {
		return ref, err
	}
	ms, err := d.double()
	if err != nil {
		return nil, err
	}
	if math.IsNaN(ms) || math.Abs(ms) > maxDateMillis || ms != math.Trunc(ms) {
		return nil, malformed3("date %v is not a whole number of milliseconds in range", ms)
	}
	return d.leaf(time.UnixMilli(int64(ms)).UTC(), 11)
}

func (d *amf3Decoder) byteArray() (any, error) {
	ref, n, isRef, err := d.header()
	if isRef || err != nil {
		return ref, err
	}
	if uint64(n) > uint64(d.rest()) {
		return nil, malformed3("byte array of %d bytes truncated", n)
	}
	v := make([]byte, n)
	copy(v, d.b[d.off:])
	d.off += int(n)
	return d.leaf(v, int(n)+5)
}

func (d *amf3Decoder) array(depth int) (any, error) {
	ref, n, isRef, err := d.header()
	if isRef || err != nil {
		return ref, err
	}
	start := d.cost
	idx := d.open()
	if err := d.spend(5); err != nil {
		return nil, err
	}
	var assoc amf0.ECMAArray
	for {
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if k == "" {
			break
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if assoc == nil {
			assoc = amf0.ECMAArray{}
		}
		assoc[k] = v
	}
	if uint64(n) > uint64(d.rest()) { // every element takes at least a byte
		return nil, malformed3("array of %d elements in %d bytes", n, d.rest())
	}
	if assoc == nil {
		arr := make([]any, n)
		for i := range arr {
			if arr[i], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		d.close(idx, arr, start)
		return arr, nil
	}
	for i := 0; i < int(n); i++ {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		k := strconv.Itoa(i)
		if err := d.spend(len(k) + 2); err != nil {
			return nil, err
		}
		assoc[k] = v
	}
	d.close(idx, assoc, start)
	return assoc, nil
}

// traits reads the traits of an object whose header bits (U29 >> 1) are
// bits; inline reports whether they were defined here (rather than by
// reference).
func (d *amf3Decoder) traitsOf(bits uint32) (t *amf3Traits, inline bool, err error) {
	if bits&1 == 0 {
		i := bits >> 1
		if uint64(i) >= uint64(len(d.traits)) {
			return nil, false, malformed3("traits reference %d of %d", i, len(d.traits))
		}
		return d.traits[i], false, nil
	}
	t = &amf3Traits{ext: bits&2 != 0, dynamic: bits&4 != 0}
	if t.class, err = d.str(); err != nil {
		return nil, false, err
	}
	if !t.ext {
		count := bits >> 3
		if uint64(count) > uint64(d.rest()) { // every name takes at least a byte
			return nil, false, malformed3("%d sealed members in %d bytes", count, d.rest())
		}
		t.members = make([]string, count)
		for i := range t.members {
			name, err := d.str()
			if err != nil {
				return nil, false, err
			}
			if name == "" {
				return nil, false, malformed3("sealed member without a name")
			}
			t.members[i] = name
			t.cost += len(name) + 2
		}
	}
	d.traits = append(d.traits, t)
	return t, true, nil
}

func (d *amf3Decoder) object(depth int) (any, error) {
	ref, bits, isRef, err := d.header()
	if isRef || err != nil {
		return ref, err
	}
	start := d.cost
	idx := d.open()
	t, inline, err := d.traitsOf(bits)
	if err != nil {
		return nil, err
	}
	if t.ext {
		if t.class != classArrayCollection && t.class != classObjectProxy {
			return nil, fmt.Errorf("%w: externalizable class %q", ErrAMF3, t.class)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		d.close(idx, v, start)
		return v, nil
	}
	if !inline {
		if err := d.spend(t.cost); err != nil {
			return nil, err
		}
	}
	if err := d.spend(3); err != nil {
		return nil, err
	}
	if uint64(len(t.members)) > uint64(d.rest()) {
		return nil, malformed3("%d sealed values in %d bytes", len(t.members), d.rest())
	}
	obj := make(map[string]any, len(t.members))
	for _, name := range t.members {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj[name] = v
	}
	if t.dynamic {
		for {
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			if k == "" {
				break
			}
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			obj[k] = v
		}
	}
	d.close(idx, obj, start)
	return obj, nil
}

func (d *amf3Decoder) numberVector(m byte) (any, error) {
	ref, n, isRef, err := d.header()
	if isRef || err != nil {
		return ref, err
	}
	if _, err := d.byte1(); err != nil { // fixed-length flag
		return nil, err
	}
	size := uint64(4)
	if m == m3VectorDouble {
		size = 8
	}
	if uint64(n)*size > uint64(d.rest()) {
		return nil, malformed3("vector of %d numbers in %d bytes", n, d.rest())
	}
	arr := make([]any, n)
	for i := range arr {
		p := d.b[d.off:]
		switch m {
		case m3VectorInt:
			arr[i] = float64(int32(binary.BigEndian.Uint32(p)))
		case m3VectorUint:
			arr[i] = float64(binary.BigEndian.Uint32(p))
		default:
			arr[i] = math.Float64frombits(binary.BigEndian.Uint64(p))
		}
		d.off += int(size)
	}
	return d.leaf(arr, 5+9*int(n))
}

func (d *amf3Decoder) objectVector(depth int) (any, error) {
	ref, n, isRef, err := d.header()
	if isRef || err != nil {
		return ref, err
	}
	start := d.cost
	idx := d.open()
	if _, err := d.byte1(); err != nil { // fixed-length flag
		return nil, err
	}
	if _, err := d.str(); err != nil { // element type name, unused
		return nil, err
	}
	if err := d.spend(5); err != nil {
		return nil, err
	}
	if uint64(n) > uint64(d.rest()) {
		return nil, malformed3("vector of %d objects in %d bytes", n, d.rest())
	}
	arr := make([]any, n)
	for i := range arr {
		if arr[i], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	d.close(idx, arr, start)
	return arr, nil
}

func (d *amf3Decoder) dictionary(depth int) (any, error) {
	ref, n, isRef, err := d.header()
	if isRef || err != nil {
		return ref, err
	}
	start := d.cost
	idx := d.open()
	if _, err := d.byte1(); err != nil { // weak-keys flag
		return nil, err
	}
	if err := d.spend(3); err != nil {
		return nil, err
	}
	if uint64(n)*2 > uint64(d.rest()) { // a key and a value take at least a byte each
		return nil, malformed3("dictionary of %d entries in %d bytes", n, d.rest())
	}
	m := map[string]any{}
	for i := 0; i < int(n); i++ {
		kv, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		k, err := dictionaryKey(kv)
		if err != nil {
			return nil, err
		}
		if err := d.spend(len(k) + 2); err != nil {
			return nil, err
		}
		if m[k], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	d.close(idx, m, start)
	return m, nil
}

// dictionaryKey turns a Dictionary key into the string ActionScript would
// print for it. Keys that are objects have no faithful string form.
func dictionaryKey(k any) (string, error) {
	switch x := k.(type) {
	case string:
		if x != "" {
			return x, nil
		}
	case float64:
		return numberString(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "null", nil
	}
	return "", fmt.Errorf("%w: dictionary key %T %v", ErrAMF3, k, k)
}

// numberString formats f as ActionScript's String(Number) does.
func numberString(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0" // also for -0
	case f == math.Trunc(f) && math.Abs(f) < 1e21:
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	// ActionScript writes exponents without Go's leading zero: 1e-7, not 1e-07.
	s = strings.Replace(s, "e-0", "e-", 1)
	return strings.Replace(s, "e+0", "e+", 1)
}

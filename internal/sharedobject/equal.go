package sharedobject

import "github.com/relaymesh/relaymesh/internal/amf"

// Equal reports whether two messages carry the same content, comparing
// values as AMF0 does: numbers by value (NaN equals NaN), dates by instant,
// byte arrays by content.
func Equal(a, b Message) bool {
	if a.Name != b.Name || a.Version != b.Version || a.Persistent != b.Persistent || len(a.Events) != len(b.Events) {
		return false
	}
	for i := range a.Events {
		if !EventEqual(a.Events[i], b.Events[i]) {
			return false
		}
	}
	return true
}

// EventEqual reports whether two events carry the same content.
func EventEqual(x, y Event) bool {
	if x.Type != y.Type || x.Key != y.Key || x.Handler != y.Handler || x.Code != y.Code ||
		x.Level != y.Level || len(x.Args) != len(y.Args) || !amf.Equal(x.Value, y.Value) {
		return false
	}
	for i := range x.Args {
		if !amf.Equal(x.Args[i], y.Args[i]) {
			return false
		}
	}
	return true
}

// ValueEqual reports whether two values are equal as AMF values (amf.Equal).
func ValueEqual(a, b any) bool { return amf.Equal(a, b) }

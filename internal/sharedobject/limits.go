package sharedobject

// Limits bound what Decode accepts from a peer. Zero fields take the
// defaults below (see WithDefaults).
type Limits struct {
	MaxMessageBytes int // whole payload; default 1 MiB
	MaxEvents       int // events per message after splitting Change pairs; default 4096
	MaxKeyBytes     int // object names, slot keys, handler names, status strings; default 1024
	MaxDepth        int // nesting of AMF0 and AMF3 objects and arrays; default 32
}

// DefaultLimits is the Limits that Decode uses.
var DefaultLimits = Limits{
	MaxMessageBytes: 1 << 20,
	MaxEvents:       4096,
	MaxKeyBytes:     1024,
	MaxDepth:        32,
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxMessageBytes <= 0 {
		l.MaxMessageBytes = DefaultLimits.MaxMessageBytes
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = DefaultLimits.MaxEvents
	}
	if l.MaxKeyBytes <= 0 {
		l.MaxKeyBytes = DefaultLimits.MaxKeyBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	return l
}

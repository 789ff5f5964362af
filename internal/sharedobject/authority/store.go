package authority

import (
	"maps"
	"sync"
)

// Snapshot is the stored content of a persistent shared object.
type Snapshot struct {
	Version uint32
	Slots   map[string]any // AMF0 values (see package sharedobject)
}

// Store keeps persistent shared objects between uses and restarts. Calls may
// come from several goroutines.
type Store interface {
	// Load returns the object's snapshot, or ok == false if it was never saved.
	Load(scope, name string) (s Snapshot, ok bool, err error)
	// Save replaces the object's snapshot.
	Save(scope, name string, s Snapshot) error
}

// MemoryStore is a Store in memory, for tests and single-process setups.
type MemoryStore struct {
	mu sync.Mutex
	m  map[[2]string]Snapshot
}

// Load implements Store.
func (s *MemoryStore) Load(scope, name string) (Snapshot, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.m[[2]string{scope, name}]
	snap.Slots = maps.Clone(snap.Slots)
	return snap, ok, nil
}

// Save implements Store.
func (s *MemoryStore) Save(scope, name string, snap Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[2]string]Snapshot{}
	}
	snap.Slots = maps.Clone(snap.Slots)
	s.m[[2]string{scope, name}] = snap
	return nil
}

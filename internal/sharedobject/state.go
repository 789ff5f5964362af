package sharedobject

import (
	"fmt"
	"slices"
)

// State is the content of one shared object: its slots and its version. The
// primary's authority and every relay's replica keep one per object. Values
// are treated as immutable once stored. A State is not safe for concurrent
// use; its owner serialises access.
type State struct {
	Version uint32
	slots   map[string]slot
	bytes   int
	scratch []byte
}

type slot struct {
	value any
	size  int // bytes of the encoded key and value
}

// NewState returns an empty State at version v.
func NewState(v uint32) *State {
	return &State{Version: v, slots: map[string]slot{}}
}

// Get returns the value of a slot.
func (s *State) Get(key string) (any, bool) {
	e, ok := s.slots[key]
	return e.value, ok
}

// Len is the number of slots.
func (s *State) Len() int { return len(s.slots) }

// Bytes is the encoded size of every key and value.
func (s *State) Bytes() int { return s.bytes }

// Size returns the encoded size of key and v as a slot, or an error when v
// cannot be encoded.
func (s *State) Size(key string, v any) (int, error) {
	b, err := AppendValue(s.scratch[:0], v)
	if err != nil {
		return 0, err
	}
	if cap(b) <= 64<<10 {
		s.scratch = b
	}
	return 2 + len(key) + len(b), nil
}

// SizeOf returns the size recorded for a slot (0 if absent).
func (s *State) SizeOf(key string) int { return s.slots[key].size }

// Set stores v under key with its encoded size (from Size).
func (s *State) Set(key string, v any, size int) {
	s.bytes += size - s.slots[key].size
	s.slots[key] = slot{value: v, size: size}
}

// Delete removes a slot and reports whether it existed.
func (s *State) Delete(key string) bool {
	e, ok := s.slots[key]
	if ok {
		s.bytes -= e.size
		delete(s.slots, key)
	}
	return ok
}

// Clear removes every slot; the version is kept.
func (s *State) Clear() {
	clear(s.slots)
	s.bytes = 0
}

// Keys returns the slot names in sorted order.
func (s *State) Keys() []string {
	keys := make([]string, 0, len(s.slots))
	for k := range s.slots {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Snapshot returns a copy of the slot map (values are shared, not copied).
func (s *State) Snapshot() map[string]any {
	m := make(map[string]any, len(s.slots))
	for k, e := range s.slots {
		m[k] = e.value
	}
	return m
}

// Load replaces the content with slots at version v, computing sizes.
func (s *State) Load(v uint32, slots map[string]any) error {
	s.Clear()
	s.Version = v
	for k, val := range slots {
		n, err := s.Size(k, val)
		if err != nil {
			return fmt.Errorf("slot %q: %w", k, err)
		}
		s.Set(k, val, n)
	}
	return nil
}

// SyncMessages returns what a client that has just used the object receives:
// UseSuccess (if useSuccess), Clear, and one Change event per slot in key
// order, split into messages whose slot data stays near chunkBytes (a slot is
// never split; chunkBytes <= 0 means one message).
func (s *State) SyncMessages(name string, persistent, useSuccess bool, chunkBytes int) []*Message {
	m := &Message{Name: name, Version: s.Version, Persistent: persistent}
	if useSuccess {
		m.Events = append(m.Events, Event{Type: EventUseSuccess})
	}
	m.Events = append(m.Events, Event{Type: EventClear})
	out := []*Message{m}
	size := 0
	for _, k := range s.Keys() {
		e := s.slots[k]
		if chunkBytes > 0 && size > 0 && size+e.size > chunkBytes {
			m = &Message{Name: name, Version: s.Version, Persistent: persistent}
			out = append(out, m)
			size = 0
		}
		m.Events = append(m.Events, Event{Type: EventChange, Key: k, Value: e.value})
		size += e.size
	}
	return out
}

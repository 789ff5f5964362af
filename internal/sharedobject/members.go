package sharedobject

// Members is a set of clients with O(1) add and remove and a dense slice for
// fan-out.
type Members struct {
	IDs   []ClientID // in no particular order; read-only for callers
	index map[ClientID]int
}

// Add adds id and reports whether it was new.
func (m *Members) Add(id ClientID) bool {
	if _, ok := m.index[id]; ok {
		return false
	}
	if m.index == nil {
		m.index = map[ClientID]int{}
	}
	m.index[id] = len(m.IDs)
	m.IDs = append(m.IDs, id)
	return true
}

// Remove removes id and reports whether it was present.
func (m *Members) Remove(id ClientID) bool {
	i, ok := m.index[id]
	if !ok {
		return false
	}
	last := len(m.IDs) - 1
	m.IDs[i] = m.IDs[last]
	m.index[m.IDs[i]] = i
	m.IDs = m.IDs[:last]
	delete(m.index, id)
	return true
}

// Len is the number of members.
func (m *Members) Len() int { return len(m.IDs) }

// Has reports whether id is a member.
func (m *Members) Has(id ClientID) bool {
	_, ok := m.index[id]
	return ok
}

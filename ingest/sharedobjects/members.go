package sharedobjects

import "github.com/relaymesh/relaymesh/internal/sharedobject"

// members is a set of clients with O(1) add and remove and a dense slice for
// fan-out.
type members struct {
	ids   []sharedobject.ClientID
	index map[sharedobject.ClientID]int
}

func (m *members) add(id sharedobject.ClientID) bool {
	if _, ok := m.index[id]; ok {
		return false
	}
	if m.index == nil {
		m.index = map[sharedobject.ClientID]int{}
	}
	m.index[id] = len(m.ids)
	m.ids = append(m.ids, id)
	return true
}

func (m *members) remove(id sharedobject.ClientID) bool {
	i, ok := m.index[id]
	if !ok {
		return false
	}
	last := len(m.ids) - 1
	m.ids[i] = m.ids[last]
	m.index[m.ids[i]] = i
	m.ids = m.ids[:last]
	delete(m.index, id)
	return true
}

func (m *members) len() int { return len(m.ids) }

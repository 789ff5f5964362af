package graph

import "testing"

// FuzzParse feeds arbitrary bytes to Parse and Build: they must return an
// error or a graph, never panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(small))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		var b Builder
		b.AddFile(file)
		g, err := b.Build()
		if err != nil {
			return
		}
		for v := range g.NumVertices() {
			_ = g.Region(VertexID(v))
		}
	})
}

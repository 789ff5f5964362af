package dashboard

import "github.com/relaymesh/relaymesh/topology/graph"

// GraphView is the answer of /api/v1/graph: what the map draws.
type GraphView struct {
	Locations []GraphLocation `json:"locations"`
	Links     [][2]int        `json:"links"` // indexes into Locations, each pair once
	Servers   []GraphServer   `json:"servers"`
}

// GraphLocation is one vertex of the graph.
type GraphLocation struct {
	ID     string  `json:"id"`
	Name   string  `json:"name,omitempty"`
	Parent string  `json:"parent,omitempty"`
	Lat    float64 `json:"lat"`
	Lon    float64 `json:"lon"`
}

// GraphServer places a server of the graph at its location.
type GraphServer struct {
	ID       string `json:"id"`
	Location string `json:"location"`
	Role     string `json:"role"`
	Capacity int    `json:"capacity"`
}

func newGraphView(g *graph.Graph) GraphView {
	gv := GraphView{Locations: make([]GraphLocation, g.NumVertices()), Links: [][2]int{}, Servers: []GraphServer{}}
	for v := range g.NumVertices() {
		l := g.Location(graph.VertexID(v))
		gv.Locations[v] = GraphLocation{ID: l.ID, Name: l.Name, Parent: l.Parent, Lat: l.Lat, Lon: l.Lon}
	}
	seen := map[[2]int]bool{}
	for _, e := range g.Edges() {
		a, b := int(e.From), int(e.To)
		if a > b {
			a, b = b, a
		}
		if a == b || seen[[2]int{a, b}] {
			continue
		}
		seen[[2]int{a, b}] = true
		gv.Links = append(gv.Links, [2]int{a, b})
	}
	for _, s := range g.Servers() {
		gv.Servers = append(gv.Servers, GraphServer{ID: s.ID, Location: g.Location(s.Vertex).ID, Role: string(s.Role), Capacity: s.CapacityViewers})
	}
	return gv
}

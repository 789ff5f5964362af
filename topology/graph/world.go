package graph

import (
	_ "embed"
	"fmt"
	"sync"
)

//go:generate go run ../internal/gen -countries ../../../shared/data/world/world-countries.json -cities ../../../shared/data/world/geonames-cities-pop100k.tsv -out world.yaml

//go:embed world.yaml
var worldYAML []byte

//go:embed devservers.yaml
var devServersYAML []byte

var world struct {
	once sync.Once
	f    *File
	err  error
}

func worldFile() (*File, error) {
	world.once.Do(func() { world.f, world.err = Parse("world.yaml", worldYAML) })
	return world.f, world.err
}

// WorldFile returns the built-in world graph as a file: six region hubs
// (eu, na, sa, as, af, oc) matched by continent, one location per country
// (id = ISO 3166-1 alpha-2 code, child of its hub) matched by country code,
// and symmetric links hub↔hub, country↔hub and along land borders. It has no
// servers. Callers must not modify it.
func WorldFile() (*File, error) { return worldFile() }

// World returns the built-in world graph with the given servers.
func World(servers ...Server) (*Graph, error) {
	f, err := worldFile()
	if err != nil {
		return nil, fmt.Errorf("built-in world graph: %w", err)
	}
	var b Builder
	b.AddFile(f)
	for _, s := range servers {
		b.AddServer(s)
	}
	return b.Build()
}

// DevServers returns the servers of the development mesh: a primary and four
// relays at the eu, na, as and sa hubs of the world graph, all on loopback.
func DevServers() ([]Server, error) {
	f, err := Parse("devservers.yaml", devServersYAML)
	if err != nil {
		return nil, err
	}
	return f.Servers, nil
}

// DevWorld is the world graph with DevServers.
func DevWorld() (*Graph, error) {
	s, err := DevServers()
	if err != nil {
		return nil, err
	}
	return World(s...)
}

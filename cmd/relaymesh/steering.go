package main

import (
	"strings"

	"github.com/relaymesh/relaymesh/packager"
)

// serverID is the node's id in the mesh.
func (n *node) serverID() string {
	if n.id != "" {
		return n.id
	}
	return n.cfg.Relay.ID
}

// steering names the redirector at base as the content steering server
// of every stream, with pathway id (nil when either is empty).
func steering(base, id string) func(app, name string) *packager.Steering {
	base = strings.TrimRight(base, "/")
	if base == "" || id == "" {
		return nil
	}
	return func(app, name string) *packager.Steering {
		path := "/" + app + "/" + name + "?base=" + id
		return &packager.Steering{Pathway: id, HLS: base + "/steer/hls" + path, DASH: base + "/steer/dash" + path,
			DASHManifest: base + "/steer/dash/" + app + "/" + name + "/manifest.mpd?base=" + id}
	}
}

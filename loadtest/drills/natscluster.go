package drills

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/relaymesh/relaymesh/internal/bus"
)

// NATSRoleEnv, when set in a drill test binary's environment, makes it run
// one NATS node (its value: a NATSNode as JSON) instead of the tests.
const NATSRoleEnv = "RELAYMESH_DRILL_NATS"

// NATSNode is one node of the drills' NATS cluster with JetStream.
type NATSNode struct {
	Name             string   `json:"name"`
	Listen           string   `json:"listen"`            // client listener
	Advertise        string   `json:"advertise"`         // client address other hosts use
	ClusterListen    string   `json:"cluster_listen"`    // route listener
	ClusterAdvertise string   `json:"cluster_advertise"` // route address other nodes use
	Routes           []string `json:"routes"`            // nats-route://host:port of the other nodes
	StoreDir         string   `json:"store_dir"`
}

func splitHostPort(a string) (string, int, error) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	return h, n, err
}

// RunNATSNode runs the node described by NATSRoleEnv's JSON until SIGTERM or
// SIGINT; it is what a drill test binary re-executed in a namespace does.
func RunNATSNode(js string) error {
	var cfg NATSNode
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		return fmt.Errorf("%s: %w", NATSRoleEnv, err)
	}
	host, port, err := splitHostPort(cfg.Listen)
	if err != nil {
		return err
	}
	chost, cport, err := splitHostPort(cfg.ClusterListen)
	if err != nil {
		return err
	}
	opts := &server.Options{
		ServerName:         cfg.Name,
		Host:               host,
		Port:               port,
		ClientAdvertise:    cfg.Advertise,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  256 << 20,
		NoSigs:             true,
		Logtime:            true,
		Cluster: server.ClusterOpts{
			Name:      "relaymesh-drills",
			Host:      chost,
			Port:      cport,
			Advertise: cfg.ClusterAdvertise,
		},
		Routes:                 server.RoutesFromStr(strings.Join(cfg.Routes, ",")),
		DisableJetStreamBanner: true,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	srv.ConfigureLogger()
	go srv.Start()
	if !srv.ReadyForConnections(20 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("nats node %s not ready", cfg.Name)
	}
	// As an operator's cluster configured as docs/operations.md says
	// ("A relay process that dies"): the clients see each other's
	// disconnects, those of every node's clients.
	if err := bus.ImportDisconnects(srv); err != nil {
		srv.Shutdown()
		return fmt.Errorf("nats node %s: %w", cfg.Name, err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}

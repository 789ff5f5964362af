package bustest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartCluster starts n in-process NATS servers with JetStream, clustered
// on 127.0.0.1 (each with a store in the test's temporary directory), and
// returns them and their client URLs joined by commas; they are shut down
// when t ends. A test may shut one down (Shutdown) to lose it.
func StartCluster(t testing.TB, n int) ([]*server.Server, string) {
	t.Helper()
	ports, cports := make([]int, n), make([]int, n)
	for i := range ports {
		ports[i], cports[i] = freePort(t), freePort(t)
	}
	var routes, urls []string
	for i := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", cports[i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	var srvs []*server.Server
	for i := range ports {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			JetStreamMaxMemory: 32 << 20, JetStreamMaxStore: 64 << 20,
			Cluster: server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: cports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		})
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		srvs = append(srvs, s)
	}
	for _, s := range srvs {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatal("server not ready")
		}
	}
	return srvs, strings.Join(urls, ",")
}

// Ask calls f with a context bounded by per, again after a short pause
// while it fails, until it succeeds or ctx ends, and returns its last error.
// A JetStream request lost on a young cluster's routes gets no answer at
// all: unbounded, it would wait for the test's whole deadline.
func Ask(ctx context.Context, per time.Duration, f func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, per)
		err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StreamLeader is the name of the server that leads the stream of KV
// bucket, asked with Ask (per request 2 s at most) until there is one or
// ctx ends.
func StreamLeader(ctx context.Context, js jetstream.JetStream, bucket string) (string, error) {
	var leader string
	err := Ask(ctx, 2*time.Second, func(ctx context.Context) error {
		st, err := js.Stream(ctx, "KV_"+bucket)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return errors.New("KV_" + bucket + " has no leader yet")
		}
		leader = info.Cluster.Leader
		return nil
	})
	return leader, err
}

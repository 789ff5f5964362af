package bus

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startCluster starts n in-process NATS servers with JetStream, clustered.
func startCluster(t *testing.T, n int) ([]*server.Server, string) {
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

// TestBucketsReplicatedInCluster: in a three-server cluster the buckets get
// three replicas, an existing one-replica bucket is given three, and with
// the server leading the placements stream gone, placements are written.
func TestBucketsReplicatedInCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server NATS cluster")
	}
	srvs, urls := startCluster(t, 3)
	c, err := Connect(Options{URLs: urls, Name: t.Name(), ReconnectWait: 100 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// An old bucket with one replica, as earlier versions made them.
	var err1 error
	for ctx.Err() == nil {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		_, err1 = c.JS.CreateKeyValue(cctx, jetstream.KeyValueConfig{Bucket: BucketDemand, History: 1, Replicas: 1})
		ccancel()
		if err1 == nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // the cluster elects its meta leader
	}
	if err1 != nil {
		t.Fatal(err1)
	}
	b, err := c.OpenBuckets(ctx, BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// The existing bucket is raised in the background.
	for _, name := range []string{BucketRelays, BucketPlacements, BucketLeader, BucketDemand} {
		r := 0
		for ctx.Err() == nil {
			st, err := c.JS.Stream(ctx, "KV_"+name)
			if err != nil {
				t.Fatal(err)
			}
			if r = st.CachedInfo().Config.Replicas; r == 3 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if r != 3 {
			t.Errorf("%s: %d replicas, want 3", name, r)
		}
	}
	st, err := c.JS.Stream(ctx, "KV_"+BucketPlacements)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Placements.Put(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	var leader string
	for ctx.Err() == nil {
		info, err := st.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
			leader = info.Cluster.Leader
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, s := range srvs {
		if s.Name() == leader {
			s.Shutdown()
		}
	}
	// Writes go on once the two left elect a new stream leader.
	var werr error
	for ctx.Err() == nil {
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
		_, werr = b.Placements.Put(wctx, "b", []byte("2"))
		wcancel()
		if werr == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if werr != nil {
		t.Fatalf("placements not writable with %s down: %v", leader, werr)
	}
	if e, err := b.Placements.Get(ctx, "a"); err != nil || string(e.Value()) != "1" {
		t.Fatalf("placement written before the loss: %v", err)
	}
}

// TestReplicasStandalone: a server without a cluster gets one replica.
func TestReplicasStandalone(t *testing.T) {
	_, c := startBus(t)
	if r := c.replicas(0); r != 1 {
		t.Fatalf("replicas without a cluster: %d, want 1", r)
	}
}

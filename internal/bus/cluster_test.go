package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
)

// TestBucketsReplicatedInCluster: in a three-server cluster the buckets get
// three replicas, an existing one-replica bucket is given three, and with
// the server leading the placements stream gone, placements are written.
func TestBucketsReplicatedInCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server NATS cluster")
	}
	srvs, urls := bustest.StartCluster(t, 3)
	c, err := bus.Connect(bus.Options{URLs: urls, Name: t.Name(), ReconnectWait: 100 * time.Millisecond}, nil)
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
		_, err1 = c.JS.CreateKeyValue(cctx, jetstream.KeyValueConfig{Bucket: bus.BucketDemand, History: 1, Replicas: 1})
		ccancel()
		if err1 == nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // the cluster elects its meta leader
	}
	if err1 != nil {
		t.Fatal(err1)
	}
	b, err := c.OpenBuckets(ctx, bus.BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// The existing bucket is raised in the background.
	for _, name := range []string{bus.BucketRelays, bus.BucketPlacements, bus.BucketLeader, bus.BucketDemand} {
		r := 0
		for ctx.Err() == nil {
			var st jetstream.Stream
			if err := bustest.Ask(ctx, 2*time.Second, func(ctx context.Context) (err error) {
				st, err = c.JS.Stream(ctx, "KV_"+name)
				return err
			}); err != nil {
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
	if err := bustest.Ask(ctx, 2*time.Second, func(ctx context.Context) error {
		_, err := b.Placements.Put(ctx, "a", []byte("1"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	leader, err := bustest.StreamLeader(ctx, c.JS, bus.BucketPlacements)
	if err != nil {
		t.Fatal(err)
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

package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestExistingLeaseBucketGetsTheTTL: a lease bucket made with another TTL
// (an older version's 5 s) is given the configured one, and Buckets says
// which TTL the server keeps.
func TestExistingLeaseBucketGetsTheTTL(t *testing.T) {
	_, c := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: BucketLeader, History: 1, TTL: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	b, err := c.OpenBuckets(ctx, BucketConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if b.LeaseTTL != DefaultLeaseTTL {
		t.Fatalf("Buckets.LeaseTTL %v, want %v", b.LeaseTTL, DefaultLeaseTTL)
	}
	st, err := b.Leader.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != DefaultLeaseTTL {
		t.Fatalf("the bucket's TTL is %v, want %v", st.TTL(), DefaultLeaseTTL)
	}
	// Opened again with a shorter one: changed again (the duplicate
	// window follows).
	b, err = c.OpenBuckets(ctx, BucketConfig{LeaseTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if st, err = b.Leader.Status(ctx); err != nil || st.TTL() != 2*time.Second || b.LeaseTTL != 2*time.Second {
		t.Fatalf("after opening with 2 s: bucket TTL %v (%v), Buckets.LeaseTTL %v", st.TTL(), err, b.LeaseTTL)
	}
}

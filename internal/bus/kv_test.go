package bus

import (
	"context"
	"errors"
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

// TestRewriteLapsed: a key that expired is written again over the revision
// it had when nothing was written to the bucket since, and refused (wrong
// last sequence) when something was; Get reads the new entry.
func TestRewriteLapsed(t *testing.T) {
	_, c := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := c.OpenBuckets(ctx, BucketConfig{LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := b.Leader.Create(ctx, LeaderKey, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	expired := func() {
		t.Helper()
		for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
			if _, err := b.Leader.Get(ctx, LeaderKey); errors.Is(err, jetstream.ErrKeyNotFound) {
				return
			}
		}
		t.Fatal("the key did not expire")
	}
	expired()
	nrev, err := c.RewriteLapsed(ctx, BucketLeader, LeaderKey, []byte("a2"), rev)
	if err != nil {
		t.Fatalf("rewriting the lapsed key: %v", err)
	}
	e, err := b.Leader.Get(ctx, LeaderKey)
	if err != nil || string(e.Value()) != "a2" || e.Revision() != nrev {
		t.Fatalf("after the rewrite: %v, %v", e, err)
	}
	expired()
	if _, err := b.Leader.Create(ctx, LeaderKey, []byte("b")); err != nil {
		t.Fatal(err)
	}
	_, err = c.RewriteLapsed(ctx, BucketLeader, LeaderKey, []byte("a3"), nrev)
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("rewriting over a revision written since: %v, want wrong last sequence", err)
	}
}

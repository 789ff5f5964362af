package bus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket names and the leader key.
const (
	BucketRelays     = "relaymesh_" + Version + "_relays"
	BucketPlacements = "relaymesh_" + Version + "_placements"
	BucketLeader     = "relaymesh_" + Version + "_leader"
	// BucketDemand holds the demand bonuses of the leading orchestrator, so
	// that the next leader does not start from nothing.
	BucketDemand = "relaymesh_" + Version + "_demand"
	// BucketSharedObjects holds the primary's persistent shared objects.
	BucketSharedObjects = "relaymesh_" + Version + "_sharedobjects"
	LeaderKey           = "leader"
)

// Default TTLs of the buckets.
const (
	// DefaultStatusTTL: a relay that has not reported for this long vanishes.
	DefaultStatusTTL = 10 * time.Second
	// DefaultLeaseTTL: a leader that has not renewed for this long loses the
	// lease. Longer than a bucket's leader election after a NATS server is
	// lost (nats-server's raft: 4–9 s) and a short network cut, so that the
	// lease outlives them; a dead leader is replaced sooner than that (its
	// connection gone, topology/orchestrator/lease.go).
	DefaultLeaseTTL = 15 * time.Second
	// DefaultDemandTTL: a stream's saved bonuses vanish when not saved again
	// for this long (ten half-lives of the default demand decay).
	DefaultDemandTTL = 10 * time.Minute
)

// Buckets are the key-value stores of the control plane.
type Buckets struct {
	Relays, Placements, Leader, Demand jetstream.KeyValue
	// LeaseTTL is the lease bucket's TTL as the server keeps it: the
	// configured one, or an existing bucket's when it could not be changed.
	LeaseTTL time.Duration
}

// BucketConfig sets the TTLs (zero: the defaults).
type BucketConfig struct {
	StatusTTL, LeaseTTL, DemandTTL time.Duration
	// Replicas of each bucket (replicas.go). Zero: DefaultReplicas, fewer
	// when the cluster has fewer servers; one on a server without a cluster.
	Replicas int
}

// OpenBuckets creates the buckets if they do not exist yet and opens them.
// It fails (rather than waits) when JetStream is unreachable: callers retry.
func (c *Conn) OpenBuckets(ctx context.Context, cfg BucketConfig) (*Buckets, error) {
	if cfg.StatusTTL <= 0 {
		cfg.StatusTTL = DefaultStatusTTL
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.DemandTTL <= 0 {
		cfg.DemandTTL = DefaultDemandTTL
	}
	// The four at once: far from a stream's leader each open is a round
	// trip or two, and callers open the buckets under a short timeout.
	b := Buckets{LeaseTTL: cfg.LeaseTTL}
	r := cfg.Replicas
	specs := []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
		ttl *time.Duration // the TTL the server keeps, when wanted
	}{
		{&b.Relays, jetstream.KeyValueConfig{Bucket: BucketRelays, History: 1, TTL: cfg.StatusTTL, Replicas: r,
			Description: "relay status, one key per relay; entries expire when a relay stops reporting"}, nil},
		{&b.Placements, jetstream.KeyValueConfig{Bucket: BucketPlacements, History: 1, Replicas: r,
			Description: "relays of each stream, written by the leading orchestrator"}, nil},
		{&b.Leader, jetstream.KeyValueConfig{Bucket: BucketLeader, History: 1, TTL: cfg.LeaseTTL, Replicas: r,
			Description: "orchestrator leadership lease"}, &b.LeaseTTL},
		{&b.Demand, jetstream.KeyValueConfig{Bucket: BucketDemand, History: 1, TTL: cfg.DemandTTL, Replicas: r,
			Description: "demand bonuses of each stream, written by the leading orchestrator"}, nil},
	}
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			*sp.kv, errs[i] = c.bucket(ctx, sp.cfg, sp.ttl)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &b, nil
}

// bucket opens cfg.Bucket, creating it if it does not exist, with
// cfg.Replicas replicas (0: the default, see replicas.go); an existing
// bucket with fewer replicas than wanted is given more. With ttl set, an
// existing bucket is given cfg.TTL (one made by another version may have
// another) and *ttl is the TTL the server keeps.
func (c *Conn) bucket(ctx context.Context, cfg jetstream.KeyValueConfig, ttl *time.Duration) (jetstream.KeyValue, error) {
	want := c.replicas(cfg.Replicas)
	kv, err := c.JS.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		c.raiseLater(cfg.Bucket, want)
		if ttl != nil {
			if *ttl, err = c.keepTTL(ctx, cfg.Bucket, cfg.TTL); err != nil {
				return nil, err
			}
		}
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bus: bucket %s: %w", cfg.Bucket, err)
	}
	for cfg.Replicas = want; ; cfg.Replicas-- {
		kv, err = c.JS.CreateKeyValue(ctx, cfg)
		var apiErr *jetstream.APIError
		if err == nil || cfg.Replicas <= 1 || errors.Is(err, jetstream.ErrBucketExists) || !errors.As(err, &apiErr) {
			break
		}
		// The cluster refused this many replicas. While it forms (its
		// servers not all known to its leader yet) that passes: the
		// caller tries again. Refused for long, there are too few servers
		// with JetStream: one fewer.
		if apiErr.ErrorCode == errCodeNoPeers && c.refusals.Add(1) <= refusalsBeforeFewer {
			break
		}
		c.log.Warn("bucket not created with this many replicas, trying fewer", "bucket", cfg.Bucket, "replicas", cfg.Replicas, "err", err)
	}
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = c.JS.KeyValue(ctx, cfg.Bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: create bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// SharedObjectsBucket creates (if needed) and opens the bucket of persistent
// shared objects: no TTL, one revision per key.
func (c *Conn) SharedObjectsBucket(ctx context.Context) (jetstream.KeyValue, error) {
	return c.bucket(ctx, jetstream.KeyValueConfig{Bucket: BucketSharedObjects, History: 1,
		Description: "persistent shared objects, one key per application scope and object"}, nil)
}

// keepTTL gives an existing bucket the TTL want and returns the one it
// has then: want, or the old one when the server refuses the change (a
// warning says so).
func (c *Conn) keepTTL(ctx context.Context, bucket string, want time.Duration) (time.Duration, error) {
	st, err := c.JS.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return 0, fmt.Errorf("bus: bucket %s: %w", bucket, err)
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxAge == want {
		return want, nil
	}
	have := cfg.MaxAge
	cfg.MaxAge = want
	if cfg.Duplicates > want {
		cfg.Duplicates = want // the server wants the window within the age
	}
	if _, err := c.JS.UpdateStream(ctx, cfg); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			c.log.Warn("bucket keeps its TTL", "bucket", bucket, "ttl", have, "want", want, "err", err)
			return have, nil
		}
		return 0, fmt.Errorf("bus: bucket %s: TTL: %w", bucket, err)
	}
	c.log.Info("bucket given another TTL", "bucket", bucket, "from", have, "to", want)
	return want, nil
}

// RewriteLapsed writes value under key in bucket only if nothing was
// written to the bucket since revision rev: the bucket's stream still ends
// at rev, whether or not rev's entry is still there. It is how a holder
// writes again a key of a bucket with a TTL that expired while the bucket
// could not be written (no entry to update: an update over rev is refused):
// the condition proves that nobody wrote the key meanwhile, as an update
// over rev would. It is for buckets of one key (the lease's): a write to
// another key of the bucket makes it fail. The new revision is returned; a
// refusal is jetstream's "wrong last sequence" API error.
func (c *Conn) RewriteLapsed(ctx context.Context, bucket, key string, value []byte, rev uint64) (uint64, error) {
	ack, err := c.JS.Publish(ctx, "$KV."+bucket+"."+key, value, jetstream.WithExpectLastSequence(rev))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultReplicas is how many copies of each control-plane bucket a NATS
// cluster keeps: with three, the loss of any one server leaves a quorum,
// so placements, statuses and the lease stay writable. A single server
// (no cluster) keeps one; a cluster of two, two.
const DefaultReplicas = 3

// refusalsBeforeFewer is how many times a connection's bucket creations
// may be refused for want of peers (a cluster still forming: its leader
// does not know every server yet) before it asks for fewer replicas.
const refusalsBeforeFewer = 10

// replicas is the number of replicas to ask for: want (DefaultReplicas
// when zero), bounded by the servers of the cluster the connection knows
// (the configured URLs and those the cluster announces), one without a
// cluster. When the count is too high anyway (servers without JetStream),
// creating a bucket steps down until the cluster accepts.
func (c *Conn) replicas(want int) int {
	if want <= 0 {
		want = DefaultReplicas
	}
	if c.NC.ConnectedClusterName() == "" {
		return 1
	}
	if n := len(c.NC.Servers()); n > 0 {
		want = min(want, n)
	}
	return max(want, 1)
}

// raiseLater checks a bucket's replicas once per connection, in the
// background: opening the buckets must not wait for it (far from the
// stream's leader every JetStream request costs a round trip, and callers
// open the buckets under a short timeout).
func (c *Conn) raiseLater(bucket string, want int) {
	if want <= 1 {
		return
	}
	if _, done := c.raised.LoadOrStore(bucket, true); done {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !c.raiseReplicas(ctx, bucket, want) {
			c.raised.Delete(bucket) // try again at the next open
		}
	}()
}

// raiseReplicas gives an existing bucket want replicas if it has fewer (a
// bucket created by an older version with one, or before the cluster
// grew). JetStream moves a stream to more replicas online; when the
// cluster refuses, the bucket stays as it is and a warning says so
// (docs/deploy.md has the manual step). It never lowers a count. It
// reports whether the bucket was checked (false: NATS did not answer).
func (c *Conn) raiseReplicas(ctx context.Context, bucket string, want int) bool {
	if want <= 1 {
		return true
	}
	st, err := c.JS.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return false
	}
	cfg := st.CachedInfo().Config
	if cfg.Replicas >= want {
		return true
	}
	have := cfg.Replicas
	cfg.Replicas = want
	if _, err := c.JS.UpdateStream(ctx, cfg); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			c.log.Warn("bucket keeps fewer replicas than wanted", "bucket", bucket, "replicas", have, "want", want, "err", err)
			return true
		}
		return false
	}
	c.log.Info("bucket given more replicas", "bucket", bucket, "from", have, "to", want)
	return true
}

// errCodeNoPeers is JetStream's "no suitable peers for placement".
const errCodeNoPeers jetstream.ErrorCode = 10005

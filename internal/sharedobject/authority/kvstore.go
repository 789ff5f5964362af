package authority

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KVStore keeps persistent shared objects in a JetStream key-value bucket,
// one key per application scope and object, so that any primary attached
// to the same NATS cluster finds them after a restart. Values are the same
// JSON as a FileStore object (slots as base64 of their AMF0 encoding).
type KVStore struct {
	KV jetstream.KeyValue
	// Timeout bounds each read and write (default 3s): the authority calls
	// the store while it holds its lock.
	Timeout time.Duration
}

func (s *KVStore) ctx() (context.Context, context.CancelFunc) {
	d := s.Timeout
	if d <= 0 {
		d = 3 * time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

// kvKey turns scope and name into a key of the bucket's alphabet.
func kvKey(scope, name string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(scope)) + "." + enc.EncodeToString([]byte(name))
}

// Load implements Store.
func (s *KVStore) Load(scope, name string) (Snapshot, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	e, err := s.KV.Get(ctx, kvKey(scope, name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Snapshot{}, false, nil
	}
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("shared-object store: %s/%s: %w", scope, name, err)
	}
	var o fileObject
	if err := json.Unmarshal(e.Value(), &o); err != nil {
		return Snapshot{}, false, fmt.Errorf("shared-object store: %s/%s: %w", scope, name, err)
	}
	snap, err := o.snapshot(scope, name)
	if err != nil {
		return Snapshot{}, false, err
	}
	return snap, true, nil
}

// Save implements Store.
func (s *KVStore) Save(scope, name string, snap Snapshot) error {
	o, err := objectOf(scope, name, snap)
	if err != nil {
		return err
	}
	data, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("shared-object store: %w", err)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.KV.Put(ctx, kvKey(scope, name), data); err != nil {
		return fmt.Errorf("shared-object store: %s/%s: %w", scope, name, err)
	}
	return nil
}

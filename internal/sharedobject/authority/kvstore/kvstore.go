// Package kvstore keeps the authority's persistent shared objects in a
// JetStream key-value bucket (the bus's relaymesh_v1_sharedobjects), so that
// any primary attached to the same NATS cluster finds them after a restart.
// It is apart from package authority, which stays pure.
package kvstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/relaymesh/relaymesh/internal/sharedobject/authority"
)

// Store is an authority.Store on a key-value bucket: one key per
// application scope and object; values are the same JSON as a FileStore
// object (authority.MarshalSnapshot).
type Store struct {
	KV jetstream.KeyValue
	// Timeout bounds each read and write (default 3s): the authority calls
	// the store while it holds its lock.
	Timeout time.Duration
}

var _ authority.Store = (*Store)(nil)

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	d := s.Timeout
	if d <= 0 {
		d = 3 * time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

// key turns scope and name into a key of the bucket's alphabet.
func key(scope, name string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(scope)) + "." + enc.EncodeToString([]byte(name))
}

// Load implements authority.Store.
func (s *Store) Load(scope, name string) (authority.Snapshot, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	e, err := s.KV.Get(ctx, key(scope, name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return authority.Snapshot{}, false, nil
	}
	if err != nil {
		return authority.Snapshot{}, false, fmt.Errorf("shared-object store: %s/%s: %w", scope, name, err)
	}
	snap, err := authority.UnmarshalSnapshot(scope, name, e.Value())
	if err != nil {
		return authority.Snapshot{}, false, err
	}
	return snap, true, nil
}

// Save implements authority.Store.
func (s *Store) Save(scope, name string, snap authority.Snapshot) error {
	data, err := authority.MarshalSnapshot(scope, name, snap)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.KV.Put(ctx, key(scope, name), data); err != nil {
		return fmt.Errorf("shared-object store: %s/%s: %w", scope, name, err)
	}
	return nil
}

package packager

import (
	"context"
	"fmt"

	"github.com/relaymesh/relaymesh/internal/hub"
)

// HubSource is a Source over the hubs of a registry: it serves the streams
// that have a hub (a publisher on the primary, or an upstream pull that a
// relay has started). A relay that pulls on the first request wraps its
// puller in a SourceFunc instead.
type HubSource struct {
	Registry *hub.Registry
	// ID names the packager's subscriptions in the hub's Info (default "packager").
	ID string
}

// Subscribe takes a reference on the hub of app/name and subscribes
// losslessly; closing the subscription drops both.
func (s HubSource) Subscribe(_ context.Context, app, name string) (Subscription, error) {
	if s.Registry.Lookup(app, name) == nil {
		return nil, fmt.Errorf("%s/%s: %w", app, name, ErrNotFound)
	}
	h := s.Registry.Acquire(app, name)
	id := s.ID
	if id == "" {
		id = "packager"
	}
	sub := h.Subscribe(hub.SubscribeOptions{Lossless: true, ID: id, Addr: "packager"})
	return &hubSubscription{Subscriber: sub, h: h}, nil
}

type hubSubscription struct {
	*hub.Subscriber
	h *hub.Hub
}

func (s *hubSubscription) Close() {
	s.Subscriber.Close()
	s.h.Release()
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, app, name string) (Subscription, error)

// Subscribe calls f.
func (f SourceFunc) Subscribe(ctx context.Context, app, name string) (Subscription, error) {
	return f(ctx, app, name)
}

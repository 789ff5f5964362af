package kvstore

import (
	"context"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus/bustest"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/authority"
)

func TestKVStore(t *testing.T) {
	_, c := bustest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := c.SharedObjectsBucket(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{KV: kv}
	if _, ok, err := s.Load("live/room", "chat"); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	snap := authority.Snapshot{Version: 9, Slots: map[string]any{"topic": "hi", "n": 2.0, "list": []any{"a", true}, "ü ✓": nil}}
	if err := s.Save("live/room", "chat", snap); err != nil {
		t.Fatal(err)
	}
	// A second store over the same bucket: what a restarted primary sees.
	kv2, err := c.SharedObjectsBucket(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := (&Store{KV: kv2}).Load("live/room", "chat")
	if !ok || err != nil || got.Version != 9 || len(got.Slots) != len(snap.Slots) {
		t.Fatalf("load: %+v %v %v", got, ok, err)
	}
	for k, v := range snap.Slots {
		if !so.ValueEqual(got.Slots[k], v) {
			t.Errorf("slot %q: %#v, want %#v", k, got.Slots[k], v)
		}
	}
	// Scopes and names that are not key characters still map to distinct keys.
	if key("a/b", "c") == key("a", "b/c") {
		t.Error("keys collide")
	}
}

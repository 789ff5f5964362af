package authority

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amf0 "github.com/yutopp/go-amf0"

	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
)

func TestPersistenceSurvivesNewAuthority(t *testing.T) {
	dir := t.TempDir()
	store, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := newAuth(t, Config{Store: store})
	connect(t, a, access.RoleViewer, 1)
	a.Handle(1, use("scores", true))
	a.Handle(1, use("tmp", false))
	values := []any{"x", 1.5, true, nil, so.Undefined{}, map[string]any{"n": []any{1.0, "a"}},
		amf0.ECMAArray{"e": false}, time.UnixMilli(1_700_000_000_123).UTC()}
	for i, v := range values {
		a.Handle(1, set("scores", string(rune('a'+i)), v))
	}
	a.Handle(1, set("tmp", "k", "gone"))
	snap, _ := a.Snapshot("live/room", "scores")
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	a.Disconnect(1)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(a.scopes) != 0 {
		t.Error("saved, unused persistent object kept in memory")
	}

	store2, err := NewFileStore(dir) // a new process
	if err != nil {
		t.Fatal(err)
	}
	b := newAuth(t, Config{Store: store2})
	connect(t, b, access.RoleViewer, 7)
	out := b.Handle(7, use("scores", true))
	m := to(out, 7)[0]
	if m.Version != snap.Version || m.Version != 7 { // 8 writes, 2 of them deletes of absent slots
		t.Errorf("version %d, want %d", m.Version, snap.Version)
	}
	got := map[string]any{}
	for _, e := range m.Events[2:] {
		got[e.Key] = e.Value
	}
	if len(got) != len(snap.Slots) {
		t.Fatalf("restored %v, saved %v", got, snap.Slots)
	}
	for k, v := range snap.Slots {
		if !so.ValueEqual(got[k], v) {
			t.Errorf("slot %s: %#v, want %#v", k, got[k], v)
		}
	}
	if out := b.Handle(7, use("tmp", false)); len(to(out, 7)[0].Events) != 2 {
		t.Error("transient object persisted")
	}
	// A persistent use of a name saved as persistent works; the flag must match.
	connect(t, b, access.RoleViewer, 8)
	expect(t, b.Handle(8, use("scores", false)), 8, "status:SharedObject.BadPersistence")
}

func TestFileStoreNamesAndAtomicity(t *testing.T) {
	dir := t.TempDir()
	s, err := NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	scopes := []string{"live/room", "../../etc/passwd", "a b/ü", strings.Repeat("long/", 100), ""}
	for i, sc := range scopes {
		if err := s.Save(sc, "o", Snapshot{Version: uint32(i + 1), Slots: map[string]any{"k": sc}}); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(scopes) {
		t.Errorf("%d files for %d scopes", len(entries), len(scopes))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") || strings.ContainsAny(e.Name(), "/\\") || len(e.Name()) > 210 {
			t.Errorf("bad file %q", e.Name())
		}
	}
	s2, _ := NewFileStore(dir)
	for i, sc := range scopes {
		snap, ok, err := s2.Load(sc, "o")
		if err != nil || !ok || snap.Version != uint32(i+1) || snap.Slots["k"] != sc {
			t.Errorf("%q: %v %v %#v", sc, ok, err, snap)
		}
	}
	if _, ok, err := s2.Load("live/room", "missing"); ok || err != nil {
		t.Error("missing object found")
	}
	// A corrupt file is an error, not a panic or an empty object.
	if err := os.WriteFile(filepath.Join(dir, fileName("bad")), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Load("bad", "o"); err == nil {
		t.Error("corrupt file accepted")
	}
	if err := s2.Save("x", "o", Snapshot{Slots: map[string]any{"f": func() {}}}); err == nil {
		t.Error("unencodable value saved")
	}
}

// failingStore fails every Save: Flush reports it and keeps the object.
type failingStore struct{ MemoryStore }

func (f *failingStore) Save(string, string, Snapshot) error { return os.ErrPermission }

func TestFlushFailureKeepsObject(t *testing.T) {
	a := newAuth(t, Config{Store: &failingStore{}})
	connect(t, a, access.RoleViewer, 1)
	a.Handle(1, use("p", true))
	a.Handle(1, set("p", "k", "v"))
	a.Disconnect(1)
	if err := a.Flush(); err == nil {
		t.Error("no error")
	}
	if _, ok := a.Snapshot("live/room", "p"); !ok {
		t.Error("unsaved object dropped")
	}
}

func TestMemoryStore(t *testing.T) {
	var s MemoryStore
	a := newAuth(t, Config{Store: &s})
	connect(t, a, access.RoleViewer, 1)
	a.Handle(1, use("p", true))
	a.Handle(1, set("p", "k", "v"))
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	snap, ok, _ := s.Load("live/room", "p")
	if !ok || snap.Slots["k"] != "v" || snap.Version != 2 {
		t.Errorf("%v %#v", ok, snap)
	}
}

func TestRunFlushesUntilCancelled(t *testing.T) {
	var s MemoryStore
	a := newAuth(t, Config{Store: &s})
	connect(t, a, access.RoleViewer, 1)
	a.Handle(1, use("p", true))
	a.Handle(1, set("p", "k", "v"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		a.Run(ctx, time.Hour)
		close(done)
	}()
	cancel()
	<-done
	if _, ok, _ := s.Load("live/room", "p"); !ok {
		t.Error("Run did not flush on exit")
	}
}

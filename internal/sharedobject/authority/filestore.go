package authority

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/relaymesh/relaymesh/internal/sharedobject"
)

// maxScopeFile bounds how much of a scope file Load reads.
const maxScopeFile = 256 << 20

// FileStore keeps persistent shared objects as one JSON file per application
// scope in a directory. Slot values are stored as base64 of their AMF0
// encoding, so every value round-trips exactly. Files are replaced
// atomically (write to a temporary file, sync, rename).
type FileStore struct {
	dir   string
	mu    sync.Mutex
	cache map[string]*scopeFile
}

type scopeFile struct {
	Objects map[string]fileObject `json:"objects"`
}

type fileObject struct {
	Version uint32            `json:"version"`
	Slots   map[string][]byte `json:"slots"` // AMF0 bytes, base64 in JSON
}

// objectOf encodes a snapshot for storage: slot values as AMF0 bytes, so
// that every value round-trips exactly.
func objectOf(scope, name string, snap Snapshot) (fileObject, error) {
	o := fileObject{Version: snap.Version, Slots: make(map[string][]byte, len(snap.Slots))}
	for k, v := range snap.Slots {
		raw, err := sharedobject.AppendValue(nil, v)
		if err != nil {
			return o, fmt.Errorf("shared-object store: %s/%s slot %q: %w", scope, name, k, err)
		}
		o.Slots[k] = raw
	}
	return o, nil
}

// snapshot decodes a stored object.
func (o fileObject) snapshot(scope, name string) (Snapshot, error) {
	snap := Snapshot{Version: o.Version, Slots: make(map[string]any, len(o.Slots))}
	for k, raw := range o.Slots {
		v, err := sharedobject.DecodeValue(raw)
		if err != nil {
			return Snapshot{}, fmt.Errorf("shared-object store: %s/%s slot %q: %w", scope, name, k, err)
		}
		snap.Slots[k] = v
	}
	return snap, nil
}

// NewFileStore returns a FileStore in dir, creating dir if needed.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shared-object store: %w", err)
	}
	return &FileStore{dir: dir, cache: map[string]*scopeFile{}}, nil
}

// fileName maps a scope to a safe file name: bytes other than letters,
// digits, '-' and '_' are escaped as %XX; very long names are hashed.
func fileName(scope string) string {
	var b strings.Builder
	for i := 0; i < len(scope); i++ {
		c := scope[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	name := b.String()
	if len(name) > 200 {
		sum := sha256.Sum256([]byte(scope))
		name = "h-" + hex.EncodeToString(sum[:])
	}
	return name + ".json"
}

// scope returns the scope's file content, read once and then cached.
func (s *FileStore) scope(scope string) (*scopeFile, error) {
	if f, ok := s.cache[scope]; ok {
		return f, nil
	}
	f := &scopeFile{Objects: map[string]fileObject{}}
	fh, err := os.Open(filepath.Join(s.dir, fileName(scope)))
	if errors.Is(err, fs.ErrNotExist) {
		s.cache[scope] = f
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shared-object store: %w", err)
	}
	defer fh.Close()
	raw, err := io.ReadAll(io.LimitReader(fh, maxScopeFile+1))
	if err != nil {
		return nil, fmt.Errorf("shared-object store: %w", err)
	}
	if len(raw) > maxScopeFile {
		return nil, fmt.Errorf("shared-object store: %s larger than %d bytes", fileName(scope), maxScopeFile)
	}
	if err := json.Unmarshal(raw, f); err != nil {
		return nil, fmt.Errorf("shared-object store: %s: %w", fileName(scope), err)
	}
	if f.Objects == nil {
		f.Objects = map[string]fileObject{}
	}
	s.cache[scope] = f
	return f, nil
}

// Load implements Store.
func (s *FileStore) Load(scope, name string) (Snapshot, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.scope(scope)
	if err != nil {
		return Snapshot{}, false, err
	}
	o, ok := f.Objects[name]
	if !ok {
		return Snapshot{}, false, nil
	}
	snap, err := o.snapshot(scope, name)
	if err != nil {
		return Snapshot{}, false, err
	}
	return snap, true, nil
}

// Save implements Store.
func (s *FileStore) Save(scope, name string, snap Snapshot) error {
	o, err := objectOf(scope, name, snap)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.scope(scope)
	if err != nil {
		return err
	}
	next := &scopeFile{Objects: make(map[string]fileObject, len(f.Objects)+1)}
	for n, fo := range f.Objects {
		next.Objects[n] = fo
	}
	next.Objects[name] = o
	if err := s.write(scope, next); err != nil {
		return err
	}
	s.cache[scope] = next
	return nil
}

func (s *FileStore) write(scope string, f *scopeFile) error {
	raw, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("shared-object store: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("shared-object store: %w", err)
	}
	_, werr := tmp.Write(raw)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(s.dir, fileName(scope)))
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("shared-object store: %w", werr)
	}
	return nil
}

// MarshalSnapshot encodes a snapshot as a FileStore encodes one object:
// JSON with slot values as base64 of their AMF0 encoding, so that every value
// round-trips exactly. Stores elsewhere (a key-value bucket) use it too.
func MarshalSnapshot(scope, name string, snap Snapshot) ([]byte, error) {
	o, err := objectOf(scope, name, snap)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("shared-object store: %w", err)
	}
	return data, nil
}

// UnmarshalSnapshot decodes what MarshalSnapshot encoded.
func UnmarshalSnapshot(scope, name string, data []byte) (Snapshot, error) {
	var o fileObject
	if err := json.Unmarshal(data, &o); err != nil {
		return Snapshot{}, fmt.Errorf("shared-object store: %s/%s: %w", scope, name, err)
	}
	return o.snapshot(scope, name)
}

package hub

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// seed reads a []byte corpus file of a fuzz target.
func seed(t *testing.T, target, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fuzz", target, name))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lit := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
	s, err := strconv.Unquote(lit)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s)
}

func TestMetadataVideoSize(t *testing.T) {
	cases := []struct {
		name string
		p    []byte
		w, h int
		ok   bool
	}{
		{"ecma", seed(t, "FuzzMetadataVideoSize", "ecma"), 1280, 720, true},
		{"setdataframe", seed(t, "FuzzMetadataVideoSize", "setdataframe"), 640, 480, true},
		{"nested object", seed(t, "FuzzMetadataVideoSize", "object-nested"), 320, 240, true},
		{"hostile array length", seed(t, "FuzzMetadataVideoSize", "huge-array"), 0, 0, false},
		{"truncated", amfMeta(640, 360)[:30], 0, 0, false},
		{"zero size", amfMeta(0, 360), 0, 0, false},
		{"not metadata", []byte{2, 0, 3, 'f', 'o', 'o', 3, 0, 0, 9}, 0, 0, false},
		{"empty", nil, 0, 0, false},
	}
	for _, c := range cases {
		w, h, ok := metadataVideoSize(c.p)
		if w != c.w || h != c.h || ok != c.ok {
			t.Errorf("%s: %dx%d %v, want %dx%d %v", c.name, w, h, ok, c.w, c.h, c.ok)
		}
	}
}

func TestAVCVideoSize(t *testing.T) {
	if w, h, ok := avcVideoSize(avcSeq); !ok || w != 640 || h != 360 {
		t.Fatalf("got %dx%d %v", w, h, ok)
	}
	for _, name := range []string{"truncated", "no-sps"} {
		if _, _, ok := avcVideoSize(seed(t, "FuzzAVCVideoSize", name)); ok {
			t.Errorf("%s: size from a broken header", name)
		}
	}
}

package hub

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/relaymesh/relaymesh/internal/av"
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

// The picture size comes from the AVC configuration (read by internal/codec,
// as the packager reads it) and beats what onMetaData claims; a broken
// sequence header leaves the metadata's size.
func TestInfoSizeFromSequenceHeader(t *testing.T) {
	r := newTestRegistry(Config{})
	h := r.Acquire("live", "size")
	defer h.Release()
	h.Begin(PublisherInfo{ID: "one"})
	h.Write(av.KindData, 0, amfMeta(1920, 1080))
	h.Write(av.KindVideo, 0, []byte{0x17, 0, 0, 0, 0, 1, 0x4d, 0x40, 0x1e, 0xff, 0xe1, 0, 24}) // truncated
	if in := h.Info(); in.Width != 1920 || in.Height != 1080 {
		t.Fatalf("after a broken header: %dx%d, want the metadata's 1920x1080", in.Width, in.Height)
	}
	h.Write(av.KindVideo, 0, avcSeq)
	if in := h.Info(); in.Width != 640 || in.Height != 360 || in.VideoCodec != "h264" {
		t.Fatalf("after the sequence header: %dx%d %s, want 640x360 h264", in.Width, in.Height, in.VideoCodec)
	}
}

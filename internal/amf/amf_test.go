package amf

import (
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	b, err := Encode("connect", 1.0, map[string]any{"app": "live", "tcUrl": "rtmp://h/live", "n": 3.0}, nil, []any{"a", true})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 5 || vs[0] != "connect" || vs[1] != 1.0 || vs[3] != nil {
		t.Fatalf("got %#v", vs)
	}
	o, ok := Object(vs[2])
	if !ok || o["app"] != "live" {
		t.Fatalf("object %#v", vs[2])
	}
}

func TestHostile(t *testing.T) {
	cases := map[string][]byte{
		"huge strict array": {0x0a, 0x7f, 0xff, 0xff, 0xff, 0x05},
		"huge long string":  {0x0c, 0xff, 0xff, 0xff, 0xff, 'a'},
		"truncated string":  {0x02, 0x00, 0x10, 'a'},
		"truncated number":  {0x00, 1, 2},
		"object no end":     {0x03, 0x00, 0x01, 'a', 0x05},
		"unknown marker":    {0x42},
		// go-amf0's decoder panics on this (ECMA array holding two strict arrays).
		"ecma of arrays": {0x08, 0, 0, 0, 2, 0, 1, 'a', 0x0a, 0, 0, 0, 1, 0x05, 0, 1, 'b', 0x0a, 0, 0, 0, 2, 0x05, 0x05, 0, 0, 0x09},
		"deep":           deep(100),
	}
	if vs, err := Decode([]byte{0x11, 0x01}); err != nil || len(vs) != 1 || vs[0] != nil {
		t.Errorf("avmplus null: %v %v", vs, err)
	}
	for name, b := range cases {
		if name == "ecma of arrays" {
			vs, err := Decode(b)
			if err != nil || len(vs) != 1 {
				t.Errorf("%s: %v %v", name, vs, err)
			}
			continue
		}
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func deep(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, 0x0a, 0, 0, 0, 1)
	}
	return append(b, 0x05)
}

func FuzzDecode(f *testing.F) {
	f.Add(MustEncode("connect", 1.0, map[string]any{"app": "live"}))
	f.Add(MustEncode("onMetaData", ECMAArray{"width": 640.0}))
	f.Add([]byte{0x0a, 0, 0, 0, 2, 0x05, 0x06})
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, err := Decode(b)
		if err != nil {
			return
		}
		// Re-encoding must not panic (go-amf0 refuses some dates with
		// sub-millisecond parts, which is an error, not a crash).
		_, _ = Encode(vs...)
	})
}

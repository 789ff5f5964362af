package amf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	amf0 "github.com/yutopp/go-amf0"
)

// Builders for hand-written AMF3 bytes.

func u29(v uint32) []byte { return appendU29(nil, v) }

// vs is an inline UTF-8-vr.
func vs(s string) []byte { return append(u29(uint32(len(s))<<1|1), s...) }

// sref is a string-table reference.
func sref(i uint32) []byte { return u29(i << 1) }

// oref is an object-table reference.
func oref(marker byte, i uint32) []byte { return append([]byte{marker}, u29(i<<1)...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func str3(s string) []byte { return append([]byte{m3String}, vs(s)...) }

func int3(i int32) []byte { return append([]byte{m3Integer}, u29(uint32(i)&maxU29)...) }

func double3(f float64) []byte {
	return binary.BigEndian.AppendUint64([]byte{m3Double}, math.Float64bits(f))
}

// anon starts an anonymous dynamic object with inline traits.
var anon = []byte{m3Object, 0x0b, 0x01}

// avm decodes one avmplus-marked value with Decode.
func avm(t *testing.T, b []byte) (any, error) {
	t.Helper()
	vs, err := Decode(append([]byte{mAVMPlus}, b...))
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		t.Fatalf("%d values", len(vs))
	}
	return vs[0], nil
}

func TestAMF3Types(t *testing.T) {
	date := time.UnixMilli(1_700_000_000_123).UTC()
	cases := []struct {
		name string
		b    []byte
		want any
	}{
		{"undefined", []byte{m3Undefined}, Undefined{}},
		{"null", []byte{m3Null}, nil},
		{"false", []byte{m3False}, false},
		{"true", []byte{m3True}, true},
		{"int 0", int3(0), 0.0},
		{"int 127", []byte{m3Integer, 0x7f}, 127.0},
		{"int 128", []byte{m3Integer, 0x81, 0x00}, 128.0},
		{"int 16384", []byte{m3Integer, 0x81, 0x80, 0x00}, 16384.0},
		{"int max", []byte{m3Integer, 0xbf, 0xff, 0xff, 0xff}, float64(maxInt29)},
		{"int -1", []byte{m3Integer, 0xff, 0xff, 0xff, 0xff}, -1.0},
		{"int min", []byte{m3Integer, 0xc0, 0x80, 0x80, 0x00}, float64(minInt29)},
		{"double", double3(-2.5), -2.5},
		{"empty string", str3(""), ""},
		{"string", str3("héllo"), "héllo"},
		{"xml doc", cat([]byte{m3XMLDoc}, vs("<a/>")), "<a/>"},
		{"xml", cat([]byte{m3XML}, vs("<b>x</b>")), "<b>x</b>"},
		{"date", cat([]byte{m3Date, 0x01}, double3(1_700_000_000_123)[1:]), date},
		{"dense array", cat([]byte{m3Array}, u29(3<<1|1), []byte{0x01}, int3(1), str3("a"), []byte{m3Null}),
			[]any{1.0, "a", nil}},
		{"empty array", []byte{m3Array, 0x01, 0x01}, []any{}},
		{"associative array", cat([]byte{m3Array, 0x01}, vs("k"), str3("v"), vs("n"), int3(2), vs("")),
			amf0.ECMAArray{"k": "v", "n": 2.0}},
		{"mixed array", cat([]byte{m3Array}, u29(2<<1|1), vs("k"), []byte{m3True}, vs(""), int3(7), int3(8)),
			amf0.ECMAArray{"k": true, "0": 7.0, "1": 8.0}},
		{"anonymous object", cat(anon, vs("app"), str3("live"), vs("n"), double3(1.5), vs("")),
			map[string]any{"app": "live", "n": 1.5}},
		{"typed sealed object", cat([]byte{m3Object}, u29(2<<4|0b0011), vs("com.example.Point"), vs("x"), vs("y"), int3(1), int3(-2)),
			map[string]any{"x": 1.0, "y": -2.0}},
		{"sealed and dynamic", cat([]byte{m3Object}, u29(1<<4|0b1011), vs("C"), vs("a"), []byte{m3False}, vs("b"), []byte{m3True}, vs("")),
			map[string]any{"a": false, "b": true}},
		{"byte array", cat([]byte{m3ByteArray}, u29(3<<1|1), []byte{0, 0xff, 7}), []byte{0, 0xff, 7}},
		{"vector int", cat([]byte{m3VectorInt}, u29(2<<1|1), []byte{0, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 5}), []any{-2.0, 5.0}},
		{"vector uint", cat([]byte{m3VectorUint}, u29(1<<1|1), []byte{1, 0xff, 0xff, 0xff, 0xfe}), []any{4294967294.0}},
		{"vector double", cat([]byte{m3VectorDouble}, u29(1<<1|1), []byte{0}, double3(0.25)[1:]), []any{0.25}},
		{"vector object", cat([]byte{m3VectorObject}, u29(2<<1|1), []byte{0}, vs("String"), str3("a"), []byte{m3Null}), []any{"a", nil}},
		{"dictionary", cat([]byte{m3Dictionary}, u29(4<<1|1), []byte{0},
			str3("s"), int3(1), int3(2), str3("two"), double3(1e21), []byte{m3True}, []byte{m3False}, []byte{m3Null}),
			map[string]any{"s": 1.0, "2": "two", "1e+21": true, "false": nil}},
		{"array collection", cat([]byte{m3Object}, u29(0b0111), vs(classArrayCollection),
			[]byte{m3Array}, u29(2<<1|1), []byte{0x01}, int3(1), int3(2)), []any{1.0, 2.0}},
		{"object proxy", cat([]byte{m3Object}, u29(0b0111), vs(classObjectProxy), anon, vs("a"), int3(1), vs("")),
			map[string]any{"a": 1.0}},
	}
	for _, c := range cases {
		got, err := avm(t, c.b)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !valueEqual(got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, got, c.want)
		}
	}
}

func TestAMF3References(t *testing.T) {
	// [ "hello", ref "hello", {a: "hello"}, ref obj, typed T{x}, T{x} by traits ref, date, ref date, bytes, ref bytes, xml, ref xml ]
	date := cat([]byte{m3Date, 0x01}, double3(86_400_000)[1:])
	b := cat([]byte{m3Array}, u29(12<<1|1), []byte{0x01},
		str3("hello"), // strs[0]
		[]byte{m3String}, sref(0),
		anon, vs("a"), []byte{m3String}, sref(0), vs(""), // objs[1]; strs: "a"=1
		oref(m3Object, 1),
		[]byte{m3Object}, u29(1<<4|0b0011), vs("T"), vs("x"), int3(1), // objs[2], traits[1]; strs: "T"=2, "x"=3
		[]byte{m3Object}, u29(1<<2|0b01), int3(2), // objs[3], traits ref 1
		date,                         // objs[4]
		oref(m3Date, 4),              //
		[]byte{m3ByteArray, 0x03, 9}, // objs[5]
		oref(m3ByteArray, 5),
		cat([]byte{m3XML}, vs("<x/>")), // objs[6]
		oref(m3XMLDoc, 6),
	)
	got, err := avm(t, b)
	if err != nil {
		t.Fatal(err)
	}
	d := time.UnixMilli(86_400_000).UTC()
	want := []any{"hello", "hello", map[string]any{"a": "hello"}, map[string]any{"a": "hello"},
		map[string]any{"x": 1.0}, map[string]any{"x": 2.0}, d, d, []byte{9}, []byte{9}, "<x/>", "<x/>"}
	if !valueEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
	// A reference to a completed object shares its Go value.
	arr := got.([]any)
	arr[2].(map[string]any)["z"] = 1.0
	if _, ok := arr[3].(map[string]any)["z"]; !ok {
		t.Error("object reference is a copy")
	}
}

// Each avmplus-marked value starts fresh reference tables.
func TestAMF3TablesPerValue(t *testing.T) {
	b := cat([]byte{mAVMPlus}, str3("abc"), []byte{mAVMPlus, m3String}, sref(0))
	if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("string reference into the previous value's table: err = %v", err)
	}
	b = cat([]byte{mAVMPlus}, str3("abc"), []byte{mAVMPlus}, str3("abc"))
	if vs, err := Decode(b); err != nil || len(vs) != 2 {
		t.Fatalf("%v %v", vs, err)
	}
}

// Nested inside AMF0 values, and AMF0 around it.
func TestAMF3InsideAMF0(t *testing.T) {
	b := cat(MustEncode("call", 3.0, nil),
		[]byte{mObject, 0, 1, 'o', mAVMPlus, m3Array, 0x03, 0x01, m3Undefined, 0, 0, mObjectEnd},
		[]byte{mStrictArray, 0, 0, 0, 1, mAVMPlus, m3True})
	vs, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"call", 3.0, nil, map[string]any{"o": []any{nil}}, []any{true}}
	if !valueEqual(vs, want) {
		t.Fatalf("got %#v", vs)
	}
}

func TestAMF3Hostile(t *testing.T) {
	deepArr := func(n int) []byte {
		var b []byte
		for i := 0; i < n; i++ {
			b = append(b, m3Array, 0x03, 0x01)
		}
		return append(b, m3Null)
	}
	// A string of 1000 bytes referenced 4000 times: 4 MB expanded from 9 kB.
	bomb := cat([]byte{m3Array}, u29(4001<<1|1), []byte{0x01}, str3(strings.Repeat("x", 1000)))
	for i := 0; i < 4000; i++ {
		bomb = append(bomb, m3String, 0x00)
	}
	// Typed objects by traits reference repeat a long member name.
	traitBomb := cat([]byte{m3Array}, u29(3001<<1|1), []byte{0x01},
		[]byte{m3Object}, u29(1<<4|0b0011), vs(""), vs(strings.Repeat("k", 2000)), []byte{m3Null})
	for i := 0; i < 3000; i++ {
		traitBomb = append(traitBomb, m3Object, 0x01, m3Null)
	}
	// Nested references: each level holds two references to the previous one.
	dag := cat([]byte{m3Array}, u29(41<<1|1), []byte{0x01, m3Array, 0x01, 0x01}) // objs[1] = []
	for i := 1; i <= 40; i++ {
		dag = append(dag, m3Array, 0x05, 0x01)
		dag = append(dag, oref(m3Array, uint32(i))...)
		dag = append(dag, oref(m3Array, uint32(i))...)
	}
	malformedCases := map[string][]byte{
		"empty":                {},
		"unknown marker":       {0x12},
		"truncated u29":        {m3Integer, 0x80, 0x80},
		"truncated double":     {m3Double, 0, 0},
		"string too long":      cat([]byte{m3String}, u29(100<<1|1), []byte("abc")),
		"string not utf8":      {m3String, 0x03, 0xff},
		"bad string ref":       {m3String, 0x02},
		"bad object ref":       {m3Object, 0x02},
		"bad traits ref":       {m3Object, 0x05},
		"huge array":           cat([]byte{m3Array}, u29(maxLen29<<1|1), []byte{0x01, m3Null}),
		"huge vector":          cat([]byte{m3VectorDouble}, u29(1<<20|1), []byte{0, 1, 2, 3}),
		"huge object vector":   cat([]byte{m3VectorObject}, u29(1<<20|1), []byte{0, 1, m3Null}),
		"huge dictionary":      cat([]byte{m3Dictionary}, u29(1<<20|1), []byte{0, m3Null, m3Null}),
		"huge sealed count":    cat([]byte{m3Object}, u29(1<<24|0b0011), vs(""), vs("a")),
		"huge byte array":      cat([]byte{m3ByteArray}, u29(1<<20|1), []byte{1, 2}),
		"huge xml":             cat([]byte{m3XML}, u29(1<<20|1), []byte("<")),
		"sealed without value": cat([]byte{m3Object}, u29(2<<4|0b0011), vs(""), vs("a"), vs("b"), []byte{m3Null}),
		"empty sealed name":    cat([]byte{m3Object}, u29(1<<4|0b0011), vs(""), vs(""), []byte{m3Null}),
		"object no end":        cat(anon, vs("a"), []byte{m3Null}),
		"array no end":         cat([]byte{m3Array, 0x01}, vs("a"), []byte{m3Null}),
		"nan date":             cat([]byte{m3Date, 0x01}, double3(math.NaN())[1:]),
		"fraction date":        cat([]byte{m3Date, 0x01}, double3(1.5)[1:]),
		"far date":             cat([]byte{m3Date, 0x01}, double3(1e15)[1:]),
		"deep":                 deepArr(MaxDepth + 1),
		"self reference":       cat([]byte{m3Array, 0x03, 0x01}, oref(m3Array, 0)),
		"cycle through object": cat(anon, vs("self"), oref(m3Object, 0), vs("")),
		"cycle through wrapper": cat([]byte{m3Object}, u29(0b0111), vs(classArrayCollection),
			[]byte{m3Array, 0x03, 0x01}, oref(m3Object, 0)),
		"string reference bomb": bomb,
		"traits reference bomb": traitBomb,
		"reference dag":         dag,
	}
	for name, b := range malformedCases {
		if _, err := avm(t, b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	unsupported := map[string][]byte{
		"externalizable":        cat([]byte{m3Object}, u29(0b0111), vs("flex.messaging.messages.AcknowledgeMessageExt"), []byte{0}),
		"dictionary object key": cat([]byte{m3Dictionary, 0x03, 0}, anon, vs(""), []byte{m3Null}),
		"dictionary empty key":  cat([]byte{m3Dictionary, 0x03, 0}, str3(""), []byte{m3Null}),
	}
	for name, b := range unsupported {
		if _, err := avm(t, b); !errors.Is(err, ErrAMF3) {
			t.Errorf("%s: err = %v, want ErrAMF3", name, err)
		}
	}
	// Exactly at the depth limit is fine.
	if _, err := avm(t, deepArr(MaxDepth)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	// A few references well within the budget are fine.
	few := cat([]byte{m3Array}, u29(5<<1|1), []byte{0x01}, str3(strings.Repeat("y", 100)))
	for i := 0; i < 4; i++ {
		few = append(few, m3String, 0x00)
	}
	if _, err := avm(t, few); err != nil {
		t.Errorf("few references: %v", err)
	}
}

func TestAMF3EncodeForms(t *testing.T) {
	cases := []struct {
		v    any
		want []byte
	}{
		{nil, []byte{m3Null}},
		{Undefined{}, []byte{m3Undefined}},
		{true, []byte{m3True}},
		{false, []byte{m3False}},
		{0.0, []byte{m3Integer, 0}},
		{1.0, []byte{m3Integer, 1}},
		{-1, []byte{m3Integer, 0xff, 0xff, 0xff, 0xff}},
		{float64(maxInt29), []byte{m3Integer, 0xbf, 0xff, 0xff, 0xff}},
		{float64(minInt29), []byte{m3Integer, 0xc0, 0x80, 0x80, 0x00}},
		{float64(maxInt29 + 1), double3(maxInt29 + 1)},
		{math.Copysign(0, -1), double3(math.Copysign(0, -1))},
		{0.5, double3(0.5)},
		{uint64(1 << 40), double3(1 << 40)},
		{int64(-1 << 40), double3(-1 << 40)},
		{"ab", []byte{m3String, 0x05, 'a', 'b'}},
		{[]byte{1, 2}, []byte{m3ByteArray, 0x05, 1, 2}},
		{[]any{"a", "a"}, []byte{m3Array, 0x05, 0x01, m3String, 0x03, 'a', m3String, 0x03, 'a'}},
		{ECMAArray{"k": 1.0}, []byte{m3Array, 0x01, 0x03, 'k', m3Integer, 1, 0x01}},
		{time.UnixMilli(2).UTC(), cat([]byte{m3Date, 0x01}, double3(2)[1:])},
		// The second anonymous object refers to the first one's traits.
		{[]any{map[string]any{"b": 1, "a": 2}, map[string]any{}},
			[]byte{m3Array, 0x05, 0x01, m3Object, 0x0b, 0x01, 0x03, 'a', m3Integer, 2, 0x03, 'b', m3Integer, 1, 0x01, m3Object, 0x01, 0x01}},
	}
	for _, c := range cases {
		got, err := AppendAMF3(nil, c.v)
		if err != nil {
			t.Errorf("%#v: %v", c.v, err)
			continue
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%#v: got % x, want % x", c.v, got, c.want)
		}
	}
	bad := []any{
		struct{}{}, map[string]any{"": 1.0}, ECMAArray{"": 1.0}, time.Unix(0, 1), time.UnixMilli(1e13),
		[]any{make(chan int)}, deepSlice(maxEncodeDepth + 2),
	}
	for _, v := range bad {
		out, err := AppendAMF3([]byte{7}, v)
		if err == nil {
			t.Errorf("%T: no error", v)
		}
		if !bytes.Equal(out, []byte{7}) {
			t.Errorf("%T: dst changed on error", v)
		}
	}
}

func deepSlice(n int) any {
	var v any = []any{}
	for i := 0; i < n; i++ {
		v = []any{v}
	}
	return v
}

func TestAMF3RoundTrip(t *testing.T) {
	values := []any{
		nil, Undefined{}, true, false, 0.0, -1.0, 1e300, math.Inf(-1), math.NaN(), math.Copysign(0, -1),
		"", "ü✓", strings.Repeat("L", 70000), []byte{}, []byte{0, 1, 2},
		time.UnixMilli(-1500).UTC(), time.UnixMilli(1_700_000_000_123).UTC(),
		[]any{}, []any{1.0, "x", []any{nil, map[string]any{"a": []byte{5}}}},
		map[string]any{}, map[string]any{"a": 1.0, "b": map[string]any{"c": ECMAArray{"d": false}}},
		ECMAArray{"x": []any{1.0}, "y": "z"},
		map[string]any{strings.Repeat("k", 70000): 1.0},
	}
	for _, v := range values {
		b, err := AppendAMF3(nil, v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		got, n, err := readAMF3(b, 0, MaxDepth)
		if err != nil || n != len(b) {
			t.Fatalf("%T: decode: %v (%d of %d bytes)", v, err, n, len(b))
		}
		if !valueEqual(got, v) {
			t.Errorf("round trip of %#v gave %#v", v, got)
		}
	}
}

// Encode and AppendValue write AMF0 where they can and AMF3 where AMF0
// cannot carry the value.
func TestEncodeFallsBackToAMF3(t *testing.T) {
	withBytes := map[string]any{"data": []byte{1, 2, 3}, "n": 1.0}
	longKey := map[string]any{strings.Repeat("k", 70000): true}
	b, err := Encode("_result", 2.0, nil, withBytes, longKey, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b, []byte{mAVMPlus, m3Object}) != 2 {
		t.Errorf("expected two avmplus objects in % x", b[:40])
	}
	vs, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !valueEqual(vs, []any{"_result", 2.0, nil, withBytes, longKey, "plain"}) {
		t.Errorf("got %#v", vs)
	}
	plain, _ := Encode(map[string]any{"a": 1.0})
	if plain[0] != mObject {
		t.Errorf("plain object not AMF0: % x", plain)
	}
	for _, v := range []any{withBytes, longKey, []byte("x"), []any{[]byte{}}} {
		b, err := AppendValue([]byte{9}, v)
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != 9 || b[1] != mAVMPlus {
			t.Errorf("%T: % x", v, b[:2])
		}
		got, err := DecodeValue(b[1:])
		if err != nil || !valueEqual(got, v) {
			t.Errorf("%T: %#v %v", v, got, err)
		}
	}
	if _, err := AppendValue(nil, map[string]any{"b": []byte{}, "": 1.0}); err == nil {
		t.Error("empty key in AMF3 fallback: no error")
	}
}

package amf

import "testing"

// connectAMF0 is a connect command as an AMF0 publisher (OBS, ffmpeg) sends it.
func connectAMF0() []byte {
	return MustEncode("connect", 1.0, map[string]any{
		"app": "live", "type": "nonprivate", "flashVer": "FMLE/3.0 (compatible; FMSc/1.0)",
		"swfUrl": "rtmp://origin.example/live", "tcUrl": "rtmp://origin.example/live",
		"fpad": false, "capabilities": 239.0, "audioCodecs": 3575.0, "videoCodecs": 252.0,
		"videoFunction": 1.0, "objectEncoding": 0.0,
	})
}

// connectAMF3 is the same connect with its command object as an AMF3
// anonymous object, as a type-17 body (after the format byte) carries it.
func connectAMF3() []byte {
	b := cat([]byte{mAVMPlus}, anon)
	for _, kv := range []struct {
		k string
		v []byte
	}{
		{"app", str3("live")}, {"type", str3("nonprivate")}, {"flashVer", str3("WIN 32,0,0,465")},
		{"swfUrl", str3("rtmp://origin.example/live")}, {"tcUrl", cat([]byte{m3String}, sref(7))},
		{"fpad", []byte{m3False}}, {"capabilities", int3(239)}, {"audioCodecs", int3(3575)},
		{"videoCodecs", int3(252)}, {"videoFunction", int3(1)}, {"pageUrl", []byte{m3Undefined}},
		{"objectEncoding", int3(3)},
	} {
		b = append(append(b, vs(kv.k)...), kv.v...)
	}
	b = append(b, vs("")...)
	return cat(MustEncode("connect", 1.0), b)
}

func TestConnectAMF3(t *testing.T) {
	vs, err := Decode(connectAMF3())
	if err != nil {
		t.Fatal(err)
	}
	o, ok := Object(vs[2])
	if !ok || o["app"] != "live" || o["tcUrl"] != "rtmp://origin.example/live" || o["objectEncoding"] != 3.0 || o["pageUrl"] != nil {
		t.Fatalf("%#v", vs)
	}
}

func benchmarkDecode(b *testing.B, p []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := Decode(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeConnectAMF0(b *testing.B) { benchmarkDecode(b, connectAMF0()) }
func BenchmarkDecodeConnectAMF3(b *testing.B) { benchmarkDecode(b, connectAMF3()) }

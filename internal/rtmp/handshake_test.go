package rtmp

import (
	"bytes"
	"crypto/rand"
	"testing"
)

// A digest-style C1 as Flash Player builds it gets a verifiable S1 and S2.
func TestDigestHandshake(t *testing.T) {
	for scheme := 0; scheme < 2; scheme++ {
		c1 := make([]byte, handshakeSize)
		rand.Read(c1)
		copy(c1[4:8], []byte{0x80, 0x00, 0x07, 0x02})
		off := digestOffset(c1, scheme)
		copy(c1[off:], digestAt(c1, off, playerKey[:30]))
		if d := findClientDigest(c1); d == nil {
			t.Fatalf("scheme %d: client digest not found", scheme)
		}
		var in bytes.Buffer
		in.WriteByte(3)
		in.Write(c1)
		in.Write(make([]byte, handshakeSize)) // C2
		var out bytes.Buffer
		if err := serverHandshake(&in, &out); err != nil {
			t.Fatal(err)
		}
		b := out.Bytes()
		if len(b) != 1+2*handshakeSize || b[0] != 3 {
			t.Fatalf("scheme %d: %d bytes", scheme, len(b))
		}
		if err := verifyServerHandshake(c1[off:off+32], b[1:1+handshakeSize], b[1+handshakeSize:]); err != nil {
			t.Fatalf("scheme %d: %v", scheme, err)
		}
	}
}

// A simple C1 is echoed in S2.
func TestSimpleHandshake(t *testing.T) {
	c1 := make([]byte, handshakeSize)
	rand.Read(c1[8:])
	var in bytes.Buffer
	in.WriteByte(3)
	in.Write(c1)
	in.Write(make([]byte, handshakeSize))
	var out bytes.Buffer
	if err := serverHandshake(&in, &out); err != nil {
		t.Fatal(err)
	}
	s2 := out.Bytes()[1+handshakeSize:]
	if !bytes.Equal(s2, c1) {
		t.Fatal("S2 does not echo C1")
	}
}

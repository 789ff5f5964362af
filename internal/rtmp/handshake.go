package rtmp

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/yutopp/go-rtmp/handshake"
)

// The server side of the RTMP handshake, in both forms clients use:
//
//   - the simple one of the RTMP 1.0 specification (random C1, echoed), and
//   - the digest ("complex") one Flash Player and FMS-era encoders use: C1
//     carries an HMAC-SHA256 digest at an offset derived from its own bytes;
//     the server answers with an S1 digested with the server key and an S2
//     signed with a key derived from the client's digest. Flash Player checks
//     S2 before it plays H.264, and ffmpeg and librtmp check S1's digest
//     whenever S1 announces a server version.
//
// go-rtmp's handshake (used for the client side) implements only the first.

const handshakeSize = 1536

// The keys are public constants of the protocol: a readable prefix followed by
// the same 32 bytes.
var (
	keyTail    = []byte{0xf0, 0xee, 0xc2, 0x4a, 0x80, 0x68, 0xbe, 0xe8, 0x2e, 0x00, 0xd0, 0xd1, 0x02, 0x9e, 0x7e, 0x57, 0x6e, 0xec, 0x5d, 0x2d, 0x29, 0x80, 0x6f, 0xab, 0x93, 0xb8, 0xe6, 0x36, 0xcf, 0xeb, 0x31, 0xae}
	playerKey  = append([]byte("Genuine Adobe Flash Player 001"), keyTail...)       // 62 bytes; the digest uses the first 30
	serverKey  = append([]byte("Genuine Adobe Flash Media Server 001"), keyTail...) // 68 bytes; the digest uses the first 36
	serverVers = [4]byte{0x0d, 0x0e, 0x0a, 0x0d}
)

// digestOffset returns where the 32-byte digest sits in a 1536-byte C1/S1
// for scheme 0 (digest in the first half) or 1 (second half).
func digestOffset(b []byte, scheme int) int {
	base := 8
	if scheme == 1 {
		base = 772
	}
	sum := int(b[base]) + int(b[base+1]) + int(b[base+2]) + int(b[base+3])
	return sum%728 + base + 4
}

// digestAt computes the HMAC of b without the 32 bytes at off.
func digestAt(b []byte, off int, key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(b[:off])
	m.Write(b[off+32:])
	return m.Sum(nil)
}

// findClientDigest returns the digest of a digest-style C1, or nil when C1
// is a simple one.
func findClientDigest(c1 []byte) []byte {
	for scheme := 0; scheme < 2; scheme++ {
		off := digestOffset(c1, scheme)
		if hmac.Equal(c1[off:off+32], digestAt(c1, off, playerKey[:30])) {
			return c1[off : off+32]
		}
	}
	return nil
}

// serverHandshake runs the server side of the handshake on rw. The caller
// has checked that the first byte is version 3 and set the deadlines.
func serverHandshake(r io.Reader, w io.Writer) error {
	c0c1 := make([]byte, 1+handshakeSize)
	if _, err := io.ReadFull(r, c0c1); err != nil {
		return err
	}
	c1 := c0c1[1:]
	out := make([]byte, 1+2*handshakeSize)
	out[0] = 3
	s1, s2 := out[1:1+handshakeSize], out[1+handshakeSize:]
	if _, err := rand.Read(s1[8:]); err != nil {
		return err
	}
	binary.BigEndian.PutUint32(s1, uint32(time.Now().UnixMilli()))
	if clientDigest := findClientDigest(c1); clientDigest != nil {
		copy(s1[4:8], serverVers[:])
		off := digestOffset(s1, 0)
		copy(s1[off:], digestAt(s1, off, serverKey[:36]))
		if _, err := rand.Read(s2); err != nil {
			return err
		}
		k := hmac.New(sha256.New, serverKey)
		k.Write(clientDigest)
		m := hmac.New(sha256.New, k.Sum(nil))
		m.Write(s2[:handshakeSize-32])
		copy(s2[handshakeSize-32:], m.Sum(nil))
	} else {
		// Simple handshake: S2 echoes C1 byte for byte (librtmp compares
		// the whole of it, time2 included).
		copy(s2, c1)
	}
	if _, err := w.Write(out); err != nil {
		return err
	}
	c2 := make([]byte, handshakeSize)
	if _, err := io.ReadFull(r, c2); err != nil {
		return err
	}
	// C2 is not checked: clients differ in what they echo, and nothing the
	// server does depends on it.
	return nil
}

// verifyServerHandshake is the client's check of a digest-style S1/S2 (used in tests).
func verifyServerHandshake(c1Digest, s1, s2 []byte) error {
	off := digestOffset(s1, 0)
	if !hmac.Equal(s1[off:off+32], digestAt(s1, off, serverKey[:36])) {
		return fmt.Errorf("S1 digest does not verify")
	}
	k := hmac.New(sha256.New, serverKey)
	k.Write(c1Digest)
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write(s2[:handshakeSize-32])
	if !bytes.Equal(s2[handshakeSize-32:], m.Sum(nil)) {
		return fmt.Errorf("S2 signature does not verify")
	}
	return nil
}

// handshake runs one side of the handshake within HandshakeTimeout: the
// server side is this file's (both forms), the client side go-rtmp's.
func (c *Conn) handshake(server bool) error {
	deadline := time.Now().Add(c.cfg.HandshakeTimeout)
	_ = c.nc.SetDeadline(deadline)
	defer c.nc.SetDeadline(time.Time{})
	var err error
	if server {
		var b []byte
		b, err = c.br.Peek(1)
		if err == nil && b[0] != 3 {
			return fmt.Errorf("%w: first byte 0x%02x", ErrNotRTMP, b[0])
		}
		if err == nil {
			err = serverHandshake(c.br, c.nc)
		}
	} else {
		err = handshake.HandshakeWithServer(c.br, c.nc, &handshake.Config{SkipHandshakeVerification: true})
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return errHandshakeTimedOut
		}
		return fmt.Errorf("rtmp handshake: %w", err)
	}
	return nil
}

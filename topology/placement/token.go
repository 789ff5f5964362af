package placement

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Claims is what an assignment token says: this viewer was sent to Server
// for Stream, and may come back there until Expires. A Provisional token
// holds the viewer there only until a nearer carrier can take it (it was
// placed far while a nearer relay was starting): ChooseSticky then moves it.
type Claims struct {
	Server      string
	Stream      string
	Expires     time.Time
	Provisional bool
}

// Token errors.
var (
	ErrTokenMalformed = errors.New("assignment token malformed")
	ErrTokenSignature = errors.New("assignment token signature does not match")
	ErrTokenExpired   = errors.New("assignment token expired")
)

// MaxTokenLen bounds the encoded token accepted by Verify.
const MaxTokenLen = 1024

const (
	tokenVersion = 1
	// tokenVersionFlags adds a flags byte after the stream (bit 0:
	// provisional); tokens without flags keep version 1.
	tokenVersionFlags = 2
	flagProvisional   = 1
	macLen            = 16 // HMAC-SHA256 truncated to 128 bits
	maxField          = 255
)

// Sign encodes c as a URL-safe token: version, expiry (Unix seconds),
// server and stream, authenticated with HMAC-SHA256 under key. Server and
// stream longer than 255 bytes are an error.
func Sign(key []byte, c Claims) (string, error) {
	if len(c.Server) > maxField || len(c.Stream) > maxField {
		return "", fmt.Errorf("assignment token: server or stream longer than %d bytes", maxField)
	}
	b := make([]byte, 0, 1+8+2+len(c.Server)+len(c.Stream)+1+macLen)
	version := byte(tokenVersion)
	if c.Provisional {
		version = tokenVersionFlags
	}
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, uint64(c.Expires.Unix()))
	b = append(b, byte(len(c.Server)))
	b = append(b, c.Server...)
	b = append(b, byte(len(c.Stream)))
	b = append(b, c.Stream...)
	if c.Provisional {
		b = append(b, flagProvisional)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	b = mac.Sum(b)[:len(b)+macLen]
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Verify decodes a token, checks its signature under key and its expiry
// against now, and returns its claims.
func Verify(key []byte, token string, now time.Time) (Claims, error) {
	if len(token) > MaxTokenLen {
		return Claims{}, ErrTokenMalformed
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 1+8+1+1+macLen || (b[0] != tokenVersion && b[0] != tokenVersionFlags) {
		return Claims{}, ErrTokenMalformed
	}
	body, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil)[:macLen], sum) {
		return Claims{}, ErrTokenSignature
	}
	p := body[9:]
	n := int(p[0])
	if len(p) < 1+n+1 {
		return Claims{}, ErrTokenMalformed
	}
	server := string(p[1 : 1+n])
	p = p[1+n:]
	m := int(p[0])
	flags := 0
	if body[0] == tokenVersionFlags {
		if len(p) != 1+m+1 {
			return Claims{}, ErrTokenMalformed
		}
		flags = int(p[1+m])
	} else if len(p) != 1+m {
		return Claims{}, ErrTokenMalformed
	}
	c := Claims{
		Server:      server,
		Stream:      string(p[1 : 1+m]),
		Expires:     time.Unix(int64(binary.BigEndian.Uint64(body[1:9])), 0),
		Provisional: flags&flagProvisional != 0,
	}
	if !now.Before(c.Expires) {
		return c, ErrTokenExpired
	}
	return c, nil
}

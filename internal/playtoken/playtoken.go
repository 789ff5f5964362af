// Package playtoken signs and verifies play tokens: short, URL-safe proofs
// that a viewer may play one stream until a given time.
//
// A token is EXPIRY "." SIGNATURE, where EXPIRY is the Unix time in seconds
// (decimal) after which the token is refused and SIGNATURE is the unpadded
// base64url encoding of HMAC-SHA256(secret, "relaymesh-play-v1\n" + app +
// "\n" + name + "\n" + EXPIRY). Every character is in [0-9A-Za-z._-], so a
// token goes unescaped in a query string and in a URL path segment. A token
// is bound to its app and stream: it does not play another one.
package playtoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// MaxLen bounds the tokens Parse accepts (a real one is 54 characters).
const MaxLen = 128

const sigLen = sha256.Size

// Errors of Verify. Their texts are safe to show a viewer: they never
// contain the token.
var (
	ErrMalformed = errors.New("malformed play token")
	ErrSignature = errors.New("play token not valid for this stream")
	ErrExpired   = errors.New("play token expired")
	ErrNoSecret  = errors.New("play tokens are not enabled here")
)

// Token is a parsed, not yet verified, token.
type Token struct {
	Expiry int64 // Unix seconds
	sig    [sigLen]byte
}

// Parse splits a token without checking its signature.
func Parse(s string) (Token, error) {
	var t Token
	if len(s) == 0 || len(s) > MaxLen {
		return t, ErrMalformed
	}
	exp, sig, ok := strings.Cut(s, ".")
	if !ok || len(exp) == 0 || len(exp) > 19 || (len(exp) > 1 && exp[0] == '0') {
		return t, ErrMalformed
	}
	for i := 0; i < len(exp); i++ {
		if exp[i] < '0' || exp[i] > '9' {
			return t, ErrMalformed
		}
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return t, ErrMalformed
	}
	if base64.RawURLEncoding.DecodedLen(len(sig)) != sigLen {
		return t, ErrMalformed
	}
	n, err := base64.RawURLEncoding.Strict().Decode(t.sig[:], []byte(sig))
	if err != nil || n != sigLen {
		return t, ErrMalformed
	}
	t.Expiry = e
	return t, nil
}

// String is the token's text.
func (t Token) String() string {
	return strconv.FormatInt(t.Expiry, 10) + "." + base64.RawURLEncoding.EncodeToString(t.sig[:])
}

func mac(secret []byte, app, name string, expiry int64) [sigLen]byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("relaymesh-play-v1\n"))
	m.Write([]byte(app))
	m.Write([]byte{'\n'})
	m.Write([]byte(name))
	m.Write([]byte{'\n'})
	m.Write([]byte(strconv.FormatInt(expiry, 10)))
	var out [sigLen]byte
	m.Sum(out[:0])
	return out
}

// Sign returns a token for app/name valid until expiry (rounded down to
// the second).
func Sign(secret []byte, app, name string, expiry time.Time) string {
	t := Token{Expiry: expiry.Unix()}
	t.sig = mac(secret, app, name, t.Expiry)
	return t.String()
}

// Verifier checks tokens against one or more secrets: the first signs, the
// others are still accepted (key rotation).
type Verifier struct {
	Secrets [][]byte
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Enabled reports whether the verifier has a secret.
func (v *Verifier) Enabled() bool { return v != nil && len(v.Secrets) > 0 }

// Verify returns nil when s is a valid, unexpired token for app/name.
func (v *Verifier) Verify(s, app, name string) error {
	if !v.Enabled() {
		return ErrNoSecret
	}
	t, err := Parse(s)
	if err != nil {
		return err
	}
	ok := false
	for _, sec := range v.Secrets {
		want := mac(sec, app, name, t.Expiry)
		if hmac.Equal(want[:], t.sig[:]) {
			ok = true
		}
	}
	if !ok {
		return ErrSignature
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if now().Unix() >= t.Expiry {
		return ErrExpired
	}
	return nil
}

// Sign makes a token with the verifier's first secret ("" without one).
func (v *Verifier) Sign(app, name string, expiry time.Time) string {
	if !v.Enabled() {
		return ""
	}
	return Sign(v.Secrets[0], app, name, expiry)
}

// Window returns the expiry of a token issued now with lifetime ttl,
// rounded up to a multiple of step: every viewer of a stream in the same
// step gets the same token, so a CDN in front of the relays caches one copy
// of each playlist and segment URL instead of one per viewer.
func Window(now time.Time, ttl, step time.Duration) time.Time {
	e := now.Add(ttl)
	if step <= 0 {
		return e
	}
	r := e.Truncate(step)
	if r.Before(e) {
		r = r.Add(step)
	}
	return r
}

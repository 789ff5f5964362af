package ingest

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Auth decides whether a publisher may publish app/name.
//
// A publisher proves itself with ?key=SECRET, checked against Keys (by
// stream name, by "app/name", or "*" for any stream), or with
// ?token=EXPIRY.SIGNATURE where EXPIRY is a Unix time and SIGNATURE is
// hex(HMAC-SHA256(TokenSecret, "app/name:EXPIRY")), made with SignToken.
type Auth struct {
	// Keys maps a stream name, "app/name" or "*" to its publish key.
	Keys map[string]string
	// TokenSecret enables signed tokens when not empty.
	TokenSecret string
	// Open lets anyone publish (dev mode).
	Open bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Errors a refused publisher is told.
var (
	ErrNoCredentials = errors.New("publishing requires ?key= or ?token=")
	ErrBadKey        = errors.New("wrong publish key")
	ErrBadToken      = errors.New("invalid publish token")
	ErrTokenExpired  = errors.New("publish token expired")
)

// Check returns nil when key or token allow publishing app/name.
func (a *Auth) Check(app, name, key, token string) error {
	if a.Open {
		return nil
	}
	if key != "" {
		for _, k := range []string{app + "/" + name, name, "*"} {
			if want, ok := a.Keys[k]; ok {
				if subtle.ConstantTimeCompare([]byte(want), []byte(key)) == 1 {
					return nil
				}
				return ErrBadKey
			}
		}
		return ErrBadKey
	}
	if token != "" {
		if a.TokenSecret == "" {
			return ErrBadToken
		}
		return a.checkToken(app, name, token)
	}
	return ErrNoCredentials
}

func (a *Auth) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Auth) checkToken(app, name, token string) error {
	exp, sig, ok := strings.Cut(token, ".")
	if !ok {
		return ErrBadToken
	}
	expiry, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return ErrBadToken
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return ErrBadToken
	}
	if !hmac.Equal(got, tokenMAC(a.TokenSecret, app, name, expiry)) {
		return ErrBadToken
	}
	if a.now().Unix() > expiry {
		return ErrTokenExpired
	}
	return nil
}

func tokenMAC(secret, app, name string, expiry int64) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s/%s:%d", app, name, expiry)
	return m.Sum(nil)
}

// SignToken makes a publish token for app/name valid until expiry.
func SignToken(secret, app, name string, expiry time.Time) string {
	e := expiry.Unix()
	return strconv.FormatInt(e, 10) + "." + hex.EncodeToString(tokenMAC(secret, app, name, e))
}

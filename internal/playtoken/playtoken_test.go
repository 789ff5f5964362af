package playtoken

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	v := &Verifier{Secrets: [][]byte{[]byte("new"), []byte("old")}, Now: func() time.Time { return now }}
	tok := v.Sign("live", "cam", now.Add(time.Minute))
	if len(tok) > 64 || strings.Trim(tok, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-") != "" {
		t.Fatalf("token %q not compact and URL-safe", tok)
	}
	if err := v.Verify(tok, "live", "cam"); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	old := Sign([]byte("old"), "live", "cam", now.Add(time.Minute))
	if err := v.Verify(old, "live", "cam"); err != nil {
		t.Fatalf("token of the previous secret: %v", err)
	}
	cases := []struct {
		tok, app, name string
		want           error
	}{
		{tok, "live", "cam2", ErrSignature},
		{tok, "other", "cam", ErrSignature},
		{Sign([]byte("wrong"), "live", "cam", now.Add(time.Minute)), "live", "cam", ErrSignature},
		{Sign([]byte("new"), "live", "cam", now), "live", "cam", ErrExpired},
		{Sign([]byte("new"), "live", "cam", now.Add(-time.Hour)), "live", "cam", ErrExpired},
		{"", "live", "cam", ErrMalformed},
		{"123", "live", "cam", ErrMalformed},
		{"x." + strings.Repeat("A", 43), "live", "cam", ErrMalformed},
		{"0123." + strings.Repeat("A", 43), "live", "cam", ErrMalformed},
		{tok + "A", "live", "cam", ErrMalformed},
		{strings.Repeat("9", 200), "live", "cam", ErrMalformed},
	}
	for _, c := range cases {
		if err := v.Verify(c.tok, c.app, c.name); !errors.Is(err, c.want) {
			t.Errorf("Verify(%q, %s/%s) = %v, want %v", c.tok, c.app, c.name, err, c.want)
		}
	}
	// Changing the expiry invalidates the signature.
	exp, sig, _ := strings.Cut(tok, ".")
	if err := v.Verify(exp+"0."+sig, "live", "cam"); !errors.Is(err, ErrSignature) {
		t.Errorf("forged expiry: %v", err)
	}
	if err := (&Verifier{}).Verify(tok, "live", "cam"); !errors.Is(err, ErrNoSecret) {
		t.Errorf("no secret: %v", err)
	}
}

func TestWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	if got := Window(now, 10*time.Minute, 5*time.Minute); got != time.Unix(1800, 0) {
		t.Errorf("Window = %v", got.Unix())
	}
	if got := Window(now.Add(time.Second), 10*time.Minute, 5*time.Minute); got != time.Unix(1800, 0) {
		t.Errorf("Window = %v, want the same token in one step", got.Unix())
	}
	if got := Window(now, time.Minute, 0); got != time.Unix(1060, 0) {
		t.Errorf("Window without step = %v", got.Unix())
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Sign([]byte("k"), "live", "cam", time.Unix(1_700_000_000, 0)))
	f.Add("1.")
	f.Add("")
	f.Add("99999999999999999999.AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Parse(s)
		if err != nil {
			return
		}
		if tok.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, tok.String())
		}
		v := &Verifier{Secrets: [][]byte{[]byte("k")}}
		_ = v.Verify(s, "live", "cam")
	})
}

// Package redact keeps secrets out of logs: the values of query parameters
// that carry keys, tokens or passwords (rtmp://host/live/cam?key=…,
// /hls/…?token=…) and the passwords of URLs are replaced by REDACTED, in
// log messages and in every attribute, whichever package logs them.
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// Mask replaces what was redacted.
const Mask = "REDACTED"

// secretParam matches a secret query parameter's name and '=' (kept) and
// its value (replaced), in a URL, a stream name with a query string, or
// any text quoting one.
var secretParam = regexp.MustCompile(`(?i)((?:^|[?&;\s"'(])(?:[a-z0-9_-]*(?:key|token|secret|passw(?:or)?d|pass|pwd|auth|authorization|sig|signature|credentials?|jwt|nkey|seed)))=([^&;\s"'#)]*)`)

// userinfo matches the password of scheme://user:password@host.
var userinfo = regexp.MustCompile(`(://[^/@:\s"']*):([^/@\s"']+)@`)

// String returns s with secrets replaced by REDACTED.
func String(s string) string {
	if !strings.ContainsAny(s, "=@") {
		return s
	}
	if strings.Contains(s, "=") {
		s = secretParam.ReplaceAllString(s, "${1}="+Mask)
	}
	if strings.Contains(s, "@") {
		s = userinfo.ReplaceAllString(s, "${1}:"+Mask+"@")
	}
	return s
}

// Handler wraps h so that no record it writes carries a secret.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ h slog.Handler }

func (r handler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(Attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = Attr(a)
	}
	return handler{r.h.WithAttrs(clean)}
}

func (r handler) WithGroup(name string) slog.Handler { return handler{r.h.WithGroup(name)} }

// Attr returns a with secrets redacted from its value (groups included).
func Attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); String(s) != s {
			return slog.String(a.Key, String(s))
		}
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = Attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		case []string:
			s = strings.Join(x, " ")
		default:
			s = fmt.Sprint(x)
		}
		if c := String(s); c != s {
			return slog.String(a.Key, c)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

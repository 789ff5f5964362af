package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"cam2?key=bad":                              "cam2?key=REDACTED",
		"live/cam?token=123.abcdef&x=1":             "live/cam?token=REDACTED&x=1",
		"rtmp://h:1935/live/cam?foo=1&streamkey=s3": "rtmp://h:1935/live/cam?foo=1&streamkey=REDACTED",
		"/hls/live/cam/index.m3u8?sig=aa;auth=bb":   "/hls/live/cam/index.m3u8?sig=REDACTED;auth=REDACTED",
		`dial "rtmp://h/live/c?Key=x": refused`:     `dial "rtmp://h/live/c?Key=REDACTED": refused`,
		"nats://user:hunter2@n1:4222":               "nats://user:REDACTED@n1:4222",
		"live/cam":                                  "live/cam",
		"a=b monkey=1":                              "a=b monkey=REDACTED",
		"viewers=3 name=cam":                        "viewers=3 name=cam",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

type url struct{ s string }

func (u url) String() string { return u.s }

func TestHandler(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&b, nil))).With("stream", "cam?key=with")
	log.Info("refused live/x?token=inmsg", "stream", "cam2?key=bad", "err", errors.New("play rtmp://h/a/b?key=inerr: no"),
		"u", url{"http://h/?password=instringer"}, slog.Group("g", "q", "x?secret=ingroup"), "n", 3)
	out := b.String()
	for _, s := range []string{"with", "bad", "inmsg", "inerr", "instringer", "ingroup"} {
		if strings.Contains(out, s) {
			t.Errorf("%q leaked: %s", s, out)
		}
	}
	if !strings.Contains(out, "cam2?key=REDACTED") || !strings.Contains(out, "n=3") {
		t.Errorf("%s", out)
	}
}

// Redacting is idempotent and leaves no value of a key= parameter.
func FuzzString(f *testing.F) {
	for _, s := range []string{"cam2?key=bad", "rtmp://u:p@h/a?token=1&x=2", "a=b", "", "?key="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := String(s)
		if String(r) != r {
			t.Fatalf("not idempotent: %q → %q → %q", s, r, String(r))
		}
		if strings.Contains(r, "?key=") && !strings.Contains(r, "?key="+Mask) && !strings.Contains(r, "?key=&") {
			i := strings.Index(r, "?key=")
			if rest := r[i+5:]; rest != "" && !strings.ContainsAny(rest[:1], "&;\t\n\v\f\r \"'#)") {
				t.Fatalf("key value left in %q (from %q)", r, s)
			}
		}
	})
}

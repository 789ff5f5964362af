package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relaymesh/relaymesh/internal/playtoken"
)

func TestPlayTokenCommand(t *testing.T) {
	f := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(f, []byte("s3cret\n"), 0o600)
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	err := runPlayToken(context.Background(), []string{"--secret-file", f, "--stream", "live/cam", "--http", "h:1"})
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	v := &playtoken.Verifier{Secrets: [][]byte{[]byte("s3cret")}}
	if len(lines) != 3 || v.Verify(lines[0], "live", "cam") != nil || lines[1] != "http://h:1/hls/live/cam/t/"+lines[0]+"/index.m3u8" {
		t.Fatalf("output %q", out)
	}
	if err := runPlayToken(context.Background(), []string{"--secret-file", f, "--stream", "cam"}); err == nil {
		t.Fatal("a stream without app accepted")
	}
}

// Package testlog gives tests a place for the logs of the servers they
// run: a buffer that goroutines may write concurrently, and a logger whose
// lines a test prints only when it fails.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads (log
// handlers write from every goroutine that logs).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// OnFailure returns a debug logger whose lines are printed, at t's end,
// only if t failed: the elections, renewals and retries behind a failure
// that happens under a loaded suite and not alone.
func OnFailure(t testing.TB) *slog.Logger {
	t.Helper()
	var buf Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the servers' log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

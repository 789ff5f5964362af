package orchestrator

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for the handler's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logOnFailure returns a debug logger whose lines are printed only if t
// fails: a cluster test's elections and renewals, for a failure that
// happens under a loaded suite and not alone.
func logOnFailure(t *testing.T) *slog.Logger {
	t.Helper()
	var buf lockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the orchestrators' log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

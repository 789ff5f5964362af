package testlog

import (
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x\n"))
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "x\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
}

func TestOnFailureLogsAtDebug(t *testing.T) {
	log := OnFailure(t)
	if !log.Enabled(t.Context(), -4) {
		t.Fatal("the logger drops debug lines")
	}
	log.Debug("kept for a failure")
}

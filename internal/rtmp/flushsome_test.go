package rtmp

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketPair returns a non-blocking writing end with a small send buffer
// and the reading end as a file.
func socketPair(t testing.TB) (int, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
	r := os.NewFile(uintptr(fds[1]), "reader")
	t.Cleanup(func() { unix.Close(fds[0]); r.Close() })
	return fds[0], r
}

// TestFlushSomePartial: writes that the socket takes only in part go out
// later in order, byte for byte what a blocking Flush writes, while more
// messages are appended between the attempts.
func TestFlushSomePartial(t *testing.T) {
	fd, r := socketPair(t)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	w := NewChunkWriter()
	w.SetChunkSize(1000)
	ref := NewChunkWriter()
	ref.SetChunkSize(1000)
	var want bytes.Buffer
	payload := make([]byte, 70000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	partial := 0
	for i := range 40 {
		p := payload[:1000+i*1500]
		w.AppendMedia(TypeVideo, 1, uint32(i*40), p)
		ref.AppendMedia(TypeVideo, 1, uint32(i*40), p)
		if err := ref.Flush(&want); err != nil {
			t.Fatal(err)
		}
		done, err := w.FlushSome(fd)
		if err != nil {
			t.Fatal(err)
		}
		if !done {
			partial++
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.Pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reader never drained the socket")
		}
		if _, err := w.FlushSome(fd); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	unix.Close(fd)
	b := <-got
	if partial == 0 {
		t.Fatal("no write was partial: the test proves nothing")
	}
	if !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("got %d bytes, want %d (equal: false)", len(b), want.Len())
	}
}

// BenchmarkFlushSome is the flusher's write path: a batch of shared frames
// appended and written with one non-blocking writev. It allocates nothing.
func BenchmarkFlushSome(b *testing.B) {
	fd, r := socketPair(b)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20)
	go func() { _, _ = io.Copy(io.Discard, r) }()
	w := NewChunkWriter()
	w.SetChunkSize(DefaultChunkSize)
	payload := make([]byte, 11000)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)) * 4)
	for i := 0; b.Loop(); i++ {
		for j := range 4 {
			w.AppendMedia(TypeVideo, 1, uint32(i*40+j), payload)
		}
		for w.Pending() > 0 {
			if _, err := w.FlushSome(fd); err != nil {
				b.Fatal(err)
			}
		}
	}
}

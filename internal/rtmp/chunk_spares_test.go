package rtmp

import (
	"bytes"
	"io"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Writers that borrow one worker's arrays, one after another, write byte
// for byte what writers of their own write, also when a socket takes only
// part of a batch (that writer keeps what it borrowed until the rest is
// out, and the others take fresh ones).
func TestChunkWriterSparesShared(t *testing.T) {
	var spares writeSpares
	const n = 3
	type end struct {
		fd       int
		w, ref   *ChunkWriter
		want     bytes.Buffer
		got      chan []byte
		partials int
	}
	ends := make([]*end, n)
	for i := range ends {
		fd, r := socketPair(t)
		e := &end{fd: fd, w: NewChunkWriter(), ref: NewChunkWriter(), got: make(chan []byte, 1)}
		e.w.borrow(&spares)
		e.w.SetChunkSize(4096)
		e.ref.SetChunkSize(4096)
		go func() {
			b, _ := io.ReadAll(r)
			e.got <- b
		}()
		ends[i] = e
	}
	payload := make([]byte, 40000)
	for i := range payload {
		payload[i] = byte(i * 13)
	}
	for round := range 30 {
		for i, e := range ends {
			for k := range 3 {
				p := payload[:500+(round*7+i*3+k)*50]
				e.w.AppendMedia(TypeVideo, 1, uint32(round*100+k*33), p)
				e.ref.AppendMedia(TypeVideo, 1, uint32(round*100+k*33), p)
			}
			e.w.Append(&Message{Type: TypeAudio, StreamID: 1, Timestamp: uint32(round * 100), Payload: payload[:300]})
			e.ref.Append(&Message{Type: TypeAudio, StreamID: 1, Timestamp: uint32(round * 100), Payload: payload[:300]})
			if err := e.ref.Flush(&e.want); err != nil {
				t.Fatal(err)
			}
			done, err := e.w.FlushSome(e.fd)
			if err != nil {
				t.Fatal(err)
			}
			if !done {
				e.partials++
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, e := range ends {
		for e.w.Pending() > 0 {
			if time.Now().After(deadline) {
				t.Fatal("a reader never drained its socket")
			}
			if _, err := e.w.FlushSome(e.fd); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// A batch the socket takes whole: the arrays go back to the worker.
	for _, e := range ends {
		e.w.AppendMedia(TypeVideo, 1, 5000, payload[:200])
		e.ref.AppendMedia(TypeVideo, 1, 5000, payload[:200])
		if err := e.ref.Flush(&e.want); err != nil {
			t.Fatal(err)
		}
		for e.w.Pending() > 0 {
			if time.Now().After(deadline) {
				t.Fatal("a reader never drained its socket")
			}
			if _, err := e.w.FlushSome(e.fd); err != nil {
				t.Fatal(err)
			}
		}
		unix.Close(e.fd)
	}
	partials := 0
	for i, e := range ends {
		b := <-e.got
		if !bytes.Equal(b, e.want.Bytes()) {
			t.Fatalf("writer %d: got %d bytes, want %d (equal: false)", i, len(b), e.want.Len())
		}
		partials += e.partials
		if e.w.vec != nil || e.w.scratch != nil {
			t.Errorf("writer %d kept borrowed arrays with nothing pending", i)
		}
	}
	if partials == 0 {
		t.Fatal("no write was partial: the test proves nothing")
	}
	if len(spares.vecs) == 0 || len(spares.scratch) == 0 {
		t.Fatalf("nothing given back to the worker: %d iovec arrays, %d scratch", len(spares.vecs), len(spares.scratch))
	}
}

// A writer borrowing its arrays allocates nothing per batch once the worker
// has some to lend.
func TestChunkWriterSparesNoAllocs(t *testing.T) {
	fd, r := socketPair(t)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20)
	go func() { _, _ = io.Copy(io.Discard, r) }()
	var spares writeSpares
	w := NewChunkWriter()
	w.borrow(&spares)
	w.SetChunkSize(DefaultChunkSize)
	payload := make([]byte, 11000)
	batch := func() {
		for j := range 4 {
			w.AppendMedia(TypeVideo, 1, uint32(j), payload)
		}
		for w.Pending() > 0 {
			if _, err := w.FlushSome(fd); err != nil {
				t.Fatal(err)
			}
		}
	}
	batch()
	if a := testing.AllocsPerRun(100, batch); a != 0 {
		t.Fatalf("%.1f allocations per batch", a)
	}
}

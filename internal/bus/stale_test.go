package bus_test

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/bus/bustest"
)

// freezer forwards TCP to a server until frozen; then it forwards nothing
// and closes nothing, as a network cut holds a connection open.
type freezer struct {
	ln     net.Listener
	frozen atomic.Bool
	done   chan struct{}
	wg     sync.WaitGroup
}

func newFreezer(t *testing.T, to string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, done: make(chan struct{})}
	var conns []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		close(f.done)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		f.wg.Wait()
	})
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			for _, p := range [][2]net.Conn{{c, s}, {s, c}} {
				f.wg.Add(1)
				go func() {
					defer f.wg.Done()
					buf := make([]byte, 4096)
					for {
						n, err := p[0].Read(buf)
						for f.frozen.Load() {
							select {
							case <-f.done:
								return
							case <-time.After(10 * time.Millisecond):
							}
						}
						if n > 0 {
							if _, werr := p[1].Write(buf[:n]); werr != nil {
								return
							}
						}
						if err != nil {
							if err != io.EOF {
								p[1].Close()
							}
							return
						}
					}
				}()
			}
		}
	}()
	return f
}

// TestStaleConnectionMovesToAnotherServer: a connection whose server stops
// answering (the TCP connection held open) moves to another server of the
// cluster after a few ping intervals, instead of nats.go's two minutes.
func TestStaleConnectionMovesToAnotherServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a two-server NATS cluster")
	}
	_, urls := bustest.StartCluster(t, 2)
	first := strings.TrimPrefix(strings.Split(urls, ",")[0], "nats://")
	fr := newFreezer(t, first)
	// Only the frozen path is configured: the other server is known from
	// the cluster's announcement.
	c, err := bus.Connect(bus.Options{URLs: "nats://" + fr.ln.Addr().String(), Name: t.Name(),
		ReconnectWait: 100 * time.Millisecond, PingInterval: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for (!c.NC.IsConnected() || len(c.NC.DiscoveredServers()) == 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(c.NC.DiscoveredServers()) == 0 {
		t.Fatal("the other server was not announced")
	}
	before := c.NC.ConnectedUrl()
	fr.frozen.Store(true)
	for c.NC.ConnectedUrl() == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if now := c.NC.ConnectedUrl(); now == before {
		t.Fatalf("still connected to %s through the frozen path", now)
	}
	if err := c.NC.Flush(); err != nil {
		t.Fatalf("flush on the new server: %v", err)
	}
}

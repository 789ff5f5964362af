package rpc

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/relaymesh/relaymesh/internal/rtmp"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
)

// pipePeers connects n sessions over loopback TCP, with readers that
// discard what the peers are sent.
func pipePeers(tb testing.TB, n int) (*Peers, []so.ClientID) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ps := NewPeers(PeersConfig{Log: log})
	cfg := rtmp.ConnConfig{ControlQueue: 1 << 20}
	var ids []so.ClientID
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	for i := 0; i < n; i++ {
		b, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			tb.Fatal(err)
		}
		a, err := ln.Accept()
		if err != nil {
			tb.Fatal(err)
		}
		type res struct {
			c   *rtmp.Conn
			err error
		}
		ch := make(chan res, 1)
		go func() { c, err := rtmp.Client(b, cfg, log); ch <- res{c, err} }()
		sc, err := rtmp.Accept(a, cfg, log)
		if err != nil {
			tb.Fatal(err)
		}
		r := <-ch
		if r.err != nil {
			tb.Fatal(r.err)
		}
		go func() {
			for {
				if _, err := r.c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		tb.Cleanup(func() { sc.Close(nil); r.c.Close(nil) })
		s := &rtmp.Session{ID: fmt.Sprintf("c%d", i), Conn: sc}
		p, _ := ps.Add(s, &rtmp.ConnectRequest{App: "live/room"})
		ids = append(ids, p.ID)
	}
	return ps, ids
}

// BenchmarkDeliver fans one shared-object change out to every peer: one
// encoding, then a control-queue append per peer.
func BenchmarkDeliver(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("peers=%d", n), func(b *testing.B) {
			ps, ids := pipePeers(b, n)
			m := &so.Message{Name: "chat", Version: 7, Events: []so.Event{{Type: so.EventChange, Key: "topic", Value: "hello"}}}
			out := make([]so.Outgoing, len(ids))
			for i, id := range ids {
				out[i] = so.Outgoing{Client: id, Message: m}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ps.Deliver(out)
			}
		})
	}
}

func TestDeliverEncodesOnce(t *testing.T) {
	ps, ids := pipePeers(t, 3)
	m := &so.Message{Name: "chat", Version: 1, Events: []so.Event{{Type: so.EventUseSuccess}}}
	allocs := testing.AllocsPerRun(50, func() {
		ps.Deliver([]so.Outgoing{{Client: ids[0], Message: m}, {Client: ids[1], Message: m}, {Client: ids[2], Message: m}, {Client: 999, Message: m}})
	})
	if allocs > 4 {
		t.Fatalf("%v allocations for one message to 3 peers", allocs)
	}
	if ps.Count("live/room") != 3 || ScopeOf("live") != "live/_definst_" || AppOf("live/room") != "live" {
		t.Fatal("registry or scope helpers")
	}
}

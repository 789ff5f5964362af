package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relaymesh/relaymesh/internal/rpc"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
)

// TestSharedObjectPropagation measures, over a primary and two chained
// relays on loopback (primary ← r1 ← r2) with RELAYMESH_SO_BENCH_CLIENTS
// clients (default 1000) on r2 using one object:
//
//   - latency from the primary's change to each client (p50, p99), with
//     changes paced every 20 ms so they do not queue behind each other;
//   - changes per second the primary accepts from 8 writers at full speed,
//     and the rate at which all clients two relays away have them.
//
// It is a measurement, not a check: it runs only with RELAYMESH_SO_BENCH=1
// and prints its figures (go test -run TestSharedObjectPropagation -v).
func TestSharedObjectPropagation(t *testing.T) {
	if os.Getenv("RELAYMESH_SO_BENCH") != "1" {
		t.Skip("set RELAYMESH_SO_BENCH=1 to measure shared-object propagation")
	}
	clients := 1000
	if s := os.Getenv("RELAYMESH_SO_BENCH_CLIENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("RELAYMESH_SO_BENCH_CLIENTS=%q", s)
		}
		clients = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := soConfigFile(t, "  messages_per_second: 1000000\n  burst: 100000\n  flood_per_second: 1000000\n  flood_burst: 100000\n")
	primary := startNode(t, runPrimary, "", "--config", cfg, "--open", "--data", t.TempDir())
	r1 := startNode(t, runRelay, "", "--config", cfg, "--id", "r1", "--upstream", "rtmp://"+primary.rtmp)
	r2 := startNode(t, runRelay, "", "--config", cfg, "--id", "r2", "--upstream", "rtmp://"+r1.rtmp)

	var (
		mu       sync.Mutex
		lat      = make([]time.Duration, 0, clients*200)
		measure  atomic.Bool
		received atomic.Int64 // "w*" changes seen by all clients together
	)
	onObject := func(o *rpc.Object, m so.Message) {
		now := time.Now().UnixNano()
		for _, e := range m.Events {
			if e.Type != so.EventChange {
				continue
			}
			if e.Key == "t" && measure.Load() {
				if sent, ok := e.Value.(float64); ok {
					mu.Lock()
					lat = append(lat, time.Duration(now-int64(sent)))
					mu.Unlock()
				}
			} else if len(e.Key) > 0 && e.Key[0] == 'w' {
				received.Add(1)
			}
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := rpc.Dial(ctx, "rtmp://"+r2.rtmp+"/live/room", rpc.ClientConfig{Log: quietLog, OnObject: onObject})
			if err != nil {
				errs <- err
				return
			}
			t.Cleanup(c.Close)
			if _, err := c.Use(ctx, "chat", false); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d clients on r2 connected and subscribed in %v", clients, time.Since(start).Round(time.Millisecond))

	writer := dialMesh(t, ctx, "rtmp://"+primary.rtmp+"/live/room")
	wobj, err := writer.Use(ctx, "chat", false)
	if err != nil {
		t.Fatal(err)
	}

	// Latency: paced changes of slot "t" carrying their send time.
	const paced = 200
	measure.Store(true)
	for i := 0; i < paced; i++ {
		if err := wobj.Set(ctx, "t", float64(time.Now().UnixNano())); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := paced * clients
	for {
		mu.Lock()
		n := len(lat)
		mu.Unlock()
		if n >= want {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("latency: %d of %d deliveries", n, want)
		case <-time.After(10 * time.Millisecond):
		}
	}
	measure.Store(false)
	mu.Lock()
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(time.Microsecond) }
	fmt.Printf("so propagation primary -> r1 -> r2 -> %d clients: %d deliveries, p50 %v p90 %v p99 %v max %v\n",
		clients, len(lat), q(0.5), q(0.9), q(0.99), lat[len(lat)-1].Round(time.Microsecond))
	mu.Unlock()

	// Throughput: 8 writers on the primary, each waiting for its Success.
	const writers, perWriter = 8, 250
	ws := make([]*rpc.Object, writers)
	for i := range ws {
		c := dialMesh(t, ctx, "rtmp://"+primary.rtmp+"/live/room")
		if ws[i], err = c.Use(ctx, "chat", false); err != nil {
			t.Fatal(err)
		}
	}
	received.Store(0)
	start = time.Now()
	var wwg sync.WaitGroup
	for i, o := range ws {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			for j := 0; j < perWriter; j++ {
				if err := o.Set(ctx, fmt.Sprintf("w%d", i), float64(j)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wwg.Wait()
	accepted := time.Since(start)
	total := int64(writers * perWriter)
	for received.Load() < total*int64(clients) {
		select {
		case <-ctx.Done():
			t.Fatalf("throughput: %d of %d deliveries", received.Load(), total*int64(clients))
		case <-time.After(5 * time.Millisecond):
		}
	}
	all := time.Since(start)
	fmt.Printf("so throughput: primary accepted %d changes from %d writers in %v (%.0f/s); all %d clients had them after %v (%.0f changes/s, %.0f deliveries/s)\n",
		total, writers, accepted.Round(time.Millisecond), float64(total)/accepted.Seconds(), clients,
		all.Round(time.Millisecond), float64(total)/all.Seconds(), float64(total*int64(clients))/all.Seconds())
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/relaymesh/relaymesh/loadtest/httpfloor"
)

// runLoadtestFloor is `relaymesh loadtest httpfloor`: the HTTP serving
// floor of `loadtest peer --proto hls` (loadtest/httpfloor), a mirror of a
// relay's playlist served by Go's net/http alone, until ctx ends.
func runLoadtestFloor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("loadtest httpfloor", flag.ContinueOnError)
	upstream := fs.String("upstream", "", "media playlist to mirror, http://HOST/hls/APP/NAME/muxed.m3u8 (required)")
	listen := fs.String("listen", "127.0.0.1:0", "where to serve the mirror (the playlist at /NAME.m3u8)")
	poll := fs.Duration("poll", 250*time.Millisecond, "how often the upstream playlist is fetched")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		return errors.New("loadtest httpfloor: --upstream is required")
	}
	m, err := httpfloor.New(httpfloor.Config{Upstream: *upstream, Poll: *poll})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("serving a mirror of %s on %s\n", *upstream, ln.Addr())
	srv := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go func() { _ = m.Run(ctx) }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

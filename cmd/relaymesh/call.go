package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/relaymesh/relaymesh/internal/redact"
	"github.com/relaymesh/relaymesh/internal/rpc"
)

func init() {
	register(command{name: "call", summary: "call a server method: 'call rtmp://HOST/APP/INSTANCE METHOD [JSON args…]'", run: runCall})
}

func runCall(ctx context.Context, args []string) error {
	url, rest := splitURL(args)
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the answer")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	pos := fs.Args()
	if url == "" && len(pos) > 0 {
		url, pos = pos[0], pos[1:]
	}
	if url == "" || len(pos) == 0 {
		return errors.New("usage: relaymesh call rtmp://HOST/APP/INSTANCE METHOD [ARG…] (each ARG is JSON, or else a string)")
	}
	method := pos[0]
	callArgs := make([]any, 0, len(pos)-1)
	for _, a := range pos[1:] {
		v, err := rpc.ParseJSON([]byte(a))
		if err != nil {
			v = a
		}
		callArgs = append(callArgs, v)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	log := slog.New(redact.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	c, err := rpc.Dial(ctx, url, rpc.ClientConfig{Log: log})
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.Call(ctx, method, callArgs...)
	if err != nil {
		return err
	}
	js, err := rpc.ToJSON(v)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(js)
}

// Command relaymesh is the one binary of the mesh. Each subcommand lives in a
// file of its own and only wires packages together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/relaymesh/relaymesh/internal/redact"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and a context cancelled on SIGINT/SIGTERM.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("relaymesh: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: relaymesh <command> [flags]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(os.Stderr, "\nrun 'relaymesh <command> -h' for the flags of a command\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "relaymesh: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := c.run(ctx, os.Args[2:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "relaymesh %s: %v\n", c.name, err)
		os.Exit(1)
	}
}

// logOutput is where the servers' logs go (a test captures them).
var logOutput io.Writer = os.Stderr

// newLogger returns a structured logger on stderr at the given level
// (debug, info, warn, error) in text or json format. Secrets (publish keys,
// tokens, passwords in URLs) are redacted from every record, whichever
// package logs it.
func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "", "text":
		return slog.New(redact.Handler(slog.NewTextHandler(logOutput, opts))), nil
	case "json":
		return slog.New(redact.Handler(slog.NewJSONHandler(logOutput, opts))), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

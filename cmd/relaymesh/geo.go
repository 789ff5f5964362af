package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"

	"github.com/relaymesh/relaymesh/geo"
)

func init() {
	register(command{
		name:    "geo",
		summary: "GeoIP tools: 'geo lookup ADDR…' locates addresses",
		run:     runGeo,
	})
}

func runGeo(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "lookup" {
		fmt.Fprintf(os.Stderr, "usage: relaymesh geo lookup [--db FILE] [--graph FILE] [--default VERTEX] ADDR…\n")
		return flag.ErrHelp
	}
	fs := flag.NewFlagSet("geo lookup", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: relaymesh geo lookup [flags] ADDR…\n\n"+
			"Prints one JSON object per address. Without --db the small database\n"+
			"built into the binary is used (demo and test ranges only).\n\n")
		fs.PrintDefaults()
	}
	dbPath := fs.String("db", "", "MaxMind City or Country database (.mmdb); default: the built-in demo database")
	graphPath := fs.String("graph", "", "location graph file (YAML); adds the matched vertex and level")
	defVertex := fs.String("default", "", "vertex for locations that no rule of --graph matches")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return flag.ErrHelp
	}

	var (
		db  *geo.DB
		err error
	)
	if *dbPath == "" {
		db, err = geo.OpenDefault()
	} else {
		db, err = geo.Open(*dbPath, geo.OpenOptions{})
	}
	if err != nil {
		return err
	}
	var matcher *geo.Matcher
	if *graphPath != "" {
		rules, err := geo.LoadGraphRules(*graphPath)
		if err != nil {
			return err
		}
		if matcher, err = geo.NewMatcher(rules, *defVertex); err != nil {
			return fmt.Errorf("%s: %w", *graphPath, err)
		}
	}

	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	failed := 0
	for _, arg := range fs.Args() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		line := geoLookupLine{Address: arg}
		addr, err := netip.ParseAddr(arg)
		var loc geo.Location
		if err == nil {
			loc, err = db.Lookup(addr)
		}
		if err != nil {
			line.Error = err.Error()
			failed++
		} else {
			j := loc.JSON()
			line.LocationJSON = &j
			if matcher != nil {
				line.Vertex, line.Level = matcher.Match(loc)
			}
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d addresses failed", failed, fs.NArg())
	}
	return nil
}

// geoLookupLine is one output line of 'geo lookup': the address, and its
// location or the error.
type geoLookupLine struct {
	Address string `json:"address"`
	Error   string `json:"error,omitempty"`
	*geo.LocationJSON
	Vertex string `json:"vertex,omitempty"`
	Level  string `json:"level,omitempty"`
}

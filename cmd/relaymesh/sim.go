package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/relaymesh/relaymesh/loadtest/sim"
)

func init() {
	register(command{
		name:    "sim",
		summary: "simulate the mesh's topology decisions on a scenario at internet scale",
		run:     runSim,
	})
}

func runSim(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: relaymesh sim --scenario FILE [--json] [--report out.html] [--scale F] [--seed N]\n\n"+
			"Runs the topology code (distance tables, placement, demand bonus, scaling)\n"+
			"against a scenario on a virtual clock and prints a summary.\n\n")
		fs.PrintDefaults()
	}
	scenario := fs.String("scenario", "", "scenario file (YAML), e.g. loadtest/scenarios/spike.yaml")
	asJSON := fs.Bool("json", false, "print the summary as JSON on stdout")
	scale := fs.Float64("scale", 1, "multiply every viewer count of the scenario")
	seed := fs.Uint64("seed", 0, "random seed (0: the scenario's)")
	scaleCap := fs.Bool("scale-capacity", false, "multiply every server's capacity by --scale too (the same problem in small)")
	logLevel := fs.String("log-level", "warn", "log level: debug shows every scaling decision")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	report := fs.String("report", "", "also write an HTML report with charts (viewers and servers per region over time, utilisation) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *scenario == "" || fs.NArg() > 0 {
		fs.Usage()
		return flag.ErrHelp
	}
	log, err := newLogger(*logLevel, "text")
	if err != nil {
		return err
	}
	sc, err := sim.LoadScenario(*scenario)
	if err != nil {
		return err
	}
	opt := sim.Options{Scale: *scale, ScaleCapacity: *scaleCap, Seed: *seed, Logger: log}
	if *report != "" {
		opt.Timeline = &sim.Timeline{}
	}
	progress := false
	if !*quiet {
		opt.Progress = func(p sim.Progress) {
			progress = true
			fmt.Fprintf(os.Stderr, "\rsim: %v / %v simulated, %d viewers, %d relays   ", p.SimTime, p.Duration, p.Viewers, p.Relays)
		}
	}
	sum, err := sim.Run(ctx, sc, opt)
	if progress {
		fmt.Fprintln(os.Stderr)
	}
	if err != nil {
		return err
	}
	if *report != "" {
		f, err := os.Create(*report)
		if err != nil {
			return err
		}
		if err := sim.WriteHTML(f, sum, opt.Timeline); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	return sum.WriteText(os.Stdout)
}

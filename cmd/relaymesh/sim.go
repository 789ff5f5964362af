package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
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
		fmt.Fprintf(fs.Output(), "usage: relaymesh sim --scenario FILE [--policy all|controller|static|load-only] [--json] [--report out.html] [--timeline out.csv] [--scale F] [--scale-capacity] [--seed N] [--foresight stream|region|region-now]\n\n"+
			"Runs the mesh's controller (the orchestrator's decisions) against a scenario on a\n"+
			"virtual clock, and the same scenario with two baselines (static relays everywhere,\n"+
			"load-only autoscaling), and prints the scorecard with the goals.\n\n")
		fs.PrintDefaults()
	}
	scenario := fs.String("scenario", "", "scenario file (YAML), e.g. loadtest/scenarios/spike.yaml")
	policy := fs.String("policy", "all", "all (the scorecard: controller and both baselines), controller, static or load-only")
	asJSON := fs.Bool("json", false, "print the scorecard (or, with one policy, its summary) as JSON on stdout")
	scale := fs.Float64("scale", 1, "multiply every viewer count of the scenario")
	scaleCap := fs.Bool("scale-capacity", false, "multiply every server's capacity by --scale too (the same problem in small)")
	seed := fs.Uint64("seed", 0, "random seed (0: the scenario's)")
	logLevel := fs.String("log-level", "warn", "log level: debug shows every decision with its simulated time (t) and reason")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	report := fs.String("report", "", "also write an HTML report with the scorecard and charts to this file")
	foresight := fs.String("foresight", "", "with --policy controller: give the controller the scenario's true audience at the horizon in place of its predictions, a diagnostic of how much of a run's excess is the prediction's: stream (each stream's whole audience; the growth split over the regions as usual), region (each region's own viewers) or region-now (each region's own viewers now, extrapolated per region)")
	timeline := fs.String("timeline", "", "also write the controller's timeline (viewers, waiting, relays open and the oracle's, stretch, relay-seconds so far, per sample) as CSV to this file")
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
	opt := sim.Options{Scale: *scale, ScaleCapacity: *scaleCap, Seed: *seed, Logger: log, Foresight: *foresight}
	if *foresight != "" && *policy != string(sim.PolicyController) {
		return fmt.Errorf("--foresight needs --policy controller: it is a diagnostic of the controller, not a scorecard")
	}
	progress := false
	if !*quiet {
		opt.Progress = func(p sim.Progress) {
			progress = true
			fmt.Fprintf(os.Stderr, "\rsim: %v / %v simulated, %d viewers, %d relays   ", p.SimTime, p.Duration, p.Viewers, p.Relays)
		}
	}
	var card *sim.Scorecard
	if *policy == "all" {
		card, err = sim.RunScorecard(ctx, sc, opt, *report != "" || *timeline != "")
	} else {
		opt.Policy = sim.Policy(*policy)
		if *report != "" || *timeline != "" {
			opt.Timeline = &sim.Timeline{}
		}
		var sum *sim.Summary
		if sum, err = sim.Run(ctx, sc, opt); err == nil {
			card = sim.SingleRun(sc, sum, opt.Timeline)
		}
	}
	if progress {
		fmt.Fprintln(os.Stderr)
	}
	if err != nil {
		return err
	}
	if *report != "" {
		if err := writeFile(*report, func(w io.Writer) error { return sim.WriteHTML(w, card) }); err != nil {
			return err
		}
	}
	if *timeline != "" {
		if err := writeFile(*timeline, card.Timelines()[0].WriteCSV); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	switch {
	case *asJSON && len(card.Runs) == 1:
		return enc.Encode(card.Runs[0])
	case *asJSON:
		return enc.Encode(card)
	case len(card.Runs) == 1:
		return card.Runs[0].WriteText(os.Stdout)
	}
	if err := card.Runs[0].WriteText(os.Stdout); err != nil {
		return err
	}
	fmt.Println()
	return card.WriteText(os.Stdout)
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

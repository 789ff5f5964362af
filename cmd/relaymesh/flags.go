package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/internal/config"
)

// cmdFlags are the flags of a server subcommand (primary, relay,
// orchestrator, dev). Each flag is bound to the field of the configuration
// its YAML key names, so every flag is also a key of the file and the two
// cannot drift apart: the defaults are the command's, the file (--config)
// goes over them, the flags given go over the file.
type cmdFlags struct {
	fs         *flag.FlagSet
	cfg        *config.Config
	configPath string
	keys       map[string]string // flag name → YAML key
	ptrs       map[string]any    // flag name → the field it sets
}

// newCmdFlags returns the flag set of command name over cfg, which holds
// the command's defaults.
func newCmdFlags(name string, cfg *config.Config) *cmdFlags {
	c := &cmdFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError), cfg: cfg, keys: map[string]string{}, ptrs: map[string]any{}}
	c.fs.StringVar(&c.configPath, "config", "", "YAML configuration file; every flag has a key (see docs/configuration.md)")
	return c
}

func (c *cmdFlags) bind(name, key string, p any) {
	if _, dup := c.keys[name]; dup {
		panic("relaymesh: flag bound twice: " + name)
	}
	c.keys[name], c.ptrs[name] = key, p
}

// keyHelp appends the YAML key to a flag's help.
func keyHelp(key, help string) string { return help + " [" + key + "]" }

func (c *cmdFlags) String(p *string, name, key, help string) {
	c.bind(name, key, p)
	c.fs.StringVar(p, name, *p, keyHelp(key, help))
}

func (c *cmdFlags) Bool(p *bool, name, key, help string) {
	c.bind(name, key, p)
	c.fs.BoolVar(p, name, *p, keyHelp(key, help))
}

func (c *cmdFlags) Int(p *int, name, key, help string) {
	c.bind(name, key, p)
	c.fs.IntVar(p, name, *p, keyHelp(key, help))
}

func (c *cmdFlags) Float(p *float64, name, key, help string) {
	c.bind(name, key, p)
	c.fs.Float64Var(p, name, *p, keyHelp(key, help))
}

func (c *cmdFlags) Duration(p *time.Duration, name, key, help string) {
	c.bind(name, key, p)
	c.fs.DurationVar(p, name, *p, keyHelp(key, help))
}

// Map binds a repeatable K=V flag that adds entries to a map key.
func (c *cmdFlags) Map(p *map[string]string, name, key, form, help string) {
	c.bind(name, key, p)
	c.fs.Var(&mapFlag{m: p, name: name, form: form}, name, keyHelp(key, help+"; repeatable"))
}

// List binds a comma-separated flag to a list key; the flag replaces the
// file's list.
func (c *cmdFlags) List(p *[]string, name, key, help string) {
	c.bind(name, key, p)
	c.fs.Var(listFlag{p}, name, keyHelp(key, help))
}

type listFlag struct{ p *[]string }

func (f listFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f listFlag) Set(v string) error {
	*f.p = nil
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			*f.p = append(*f.p, a)
		}
	}
	return nil
}

type mapFlag struct {
	m          *map[string]string
	name, form string
}

func (f *mapFlag) String() string {
	if f.m == nil {
		return ""
	}
	ks := make([]string, 0, len(*f.m))
	for k := range *f.m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func (f *mapFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" || val == "" {
		return fmt.Errorf("want %s", f.form)
	}
	if *f.m == nil {
		*f.m = map[string]string{}
	}
	(*f.m)[k] = val
	return nil
}

// configArg finds --config in args before they are parsed (the file is
// read before the flags, which go over it).
func configArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"-config", "--config"} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
		}
	}
	return ""
}

// parse reads the file named by --config over the defaults, then the
// flags, validates the result and returns the logger it configures.
func (c *cmdFlags) parse(args []string) (*slog.Logger, error) {
	if path := configArg(args); path != "" {
		if err := c.cfg.LoadFile(path); err != nil {
			return nil, err
		}
	}
	// Maps given in the file are added to by repeated flags, not replaced.
	if err := c.fs.Parse(args); err != nil {
		return nil, err
	}
	if c.fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags start with --)", c.fs.Arg(0))
	}
	if err := c.cfg.Validate(); err != nil {
		return nil, configError(err)
	}
	return newLogger(c.cfg.Log.Level, c.cfg.Log.Format)
}

// configError lists every validation problem on its own line.
func configError(err error) error {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) && len(j.Unwrap()) > 1 {
		var b strings.Builder
		b.WriteString("configuration:")
		for _, e := range j.Unwrap() {
			b.WriteString("\n  " + e.Error())
		}
		return errors.New(b.String())
	}
	return fmt.Errorf("configuration: %w", err)
}

// bindNode binds the flags primary and relay share.
func bindNode(c *cmdFlags) {
	cfg := c.cfg
	c.String(&cfg.RTMP.Listen, "rtmp", "rtmp.listen", "RTMP listen address")
	c.String(&cfg.HTTP.Listen, "http", "http.listen", "HTTP listen address for /healthz, /metrics, /api/v1/streams, /hls/, /dash/")
	bindLog(c)
	c.Bool(&cfg.HTTP.Pprof, "pprof", "http.pprof", "serve /debug/pprof/ on the HTTP listener")
	c.Int(&cfg.Hub.MetricsStreams, "metrics-streams", "hub.metrics_streams", "streams with their own app/stream labels on the relaymesh_stream_* metrics; the others share stream=\"_other\" (negative: none)")
	c.String(&cfg.HLS.SteeringURL, "steering-url", "hls.steering_url", "base URL of the redirector for HLS/DASH content steering (e.g. http://play.example.net; default: none)")
	bindSecure(c) // play authorization, hooks, the admin API, TLS (secure.go)
}

func bindLog(c *cmdFlags) {
	c.String(&c.cfg.Log.Level, "log-level", "log.level", "debug, info, warn or error")
	c.String(&c.cfg.Log.Format, "log-format", "log.format", "text or json")
}

// bindNATS binds the flags that say how to reach the bus.
func bindNATS(c *cmdFlags, urlsHelp string) {
	n := &c.cfg.NATS
	c.String(&n.URLs, "nats", "nats.urls", urlsHelp)
	c.String(&n.Creds, "nats-creds", "nats.creds", "NATS credentials file")
	c.String(&n.NKey, "nats-nkey", "nats.nkey", "NATS NKey seed file")
	c.String(&n.CA, "nats-ca", "nats.ca", "CA bundle that signs the NATS servers' certificates")
	c.String(&n.Cert, "nats-cert", "nats.cert", "client certificate for NATS (with --nats-key)")
	c.String(&n.Key, "nats-key", "nats.key", "client key for NATS")
}

// bindAgent binds the flags that join a primary or relay to the mesh's bus.
func bindAgent(c *cmdFlags) {
	bindNATS(c, "NATS cluster URLs (nats://host:4222,…): report status to the orchestrator and obey its commands; empty: no control plane")
	cfg := c.cfg
	c.String(&cfg.Advertise.RTMP, "advertise-rtmp", "advertise.rtmp", "host:port viewers reach the RTMP listener at (default: the listen address)")
	c.String(&cfg.Advertise.HTTP, "advertise-http", "advertise.http", "host:port viewers reach the HTTP listener at (default: the listen address)")
	c.String(&cfg.Advertise.RTMPS, "advertise-rtmps", "advertise.rtmps", "host:port viewers reach the RTMPS listener at (default: the --rtmps address)")
	c.String(&cfg.Advertise.HTTPS, "advertise-https", "advertise.https", "host:port viewers reach the HTTPS listener at (default: the --https address)")
	c.Int(&cfg.Capacity.Viewers, "capacity-viewers", "capacity.viewers", "viewers this server takes before the orchestrator looks elsewhere (0: unlimited)")
	c.Float(&cfg.Capacity.Mbps, "capacity-mbps", "capacity.mbps", "Mbit/s this server sends before the orchestrator looks elsewhere (0: unlimited)")
}

// bindSO binds the primary's shared-object and RPC flags.
func bindSO(c *cmdFlags) {
	so := &c.cfg.SharedObjects
	c.String(&so.Data, "data", "shared_objects.data", "directory of persistent shared objects (without NATS)")
	c.Map(&so.Webhooks, "webhook", "shared_objects.webhooks", "APP=URL", "APP=URL: calls of clients of APP (or * for any) without a Go handler are POSTed to URL")
	c.Duration(&so.WebhookTimeout, "webhook-timeout", "shared_objects.webhook_timeout", "how long a call webhook may take before the client gets _error")
}

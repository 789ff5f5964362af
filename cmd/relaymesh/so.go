package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/relaymesh/relaymesh/internal/bus"
	"github.com/relaymesh/relaymesh/internal/redact"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/relaymesh/relaymesh/internal/config"
	"github.com/relaymesh/relaymesh/internal/rpc"
	"github.com/relaymesh/relaymesh/internal/rtmp"
	so "github.com/relaymesh/relaymesh/internal/sharedobject"
	"github.com/relaymesh/relaymesh/internal/sharedobject/access"
	"github.com/relaymesh/relaymesh/internal/sharedobject/authority"
	"github.com/relaymesh/relaymesh/internal/sharedobject/authority/kvstore"
	"github.com/relaymesh/relaymesh/internal/sharedobject/edge"
	"github.com/relaymesh/relaymesh/internal/sharedobject/origin"
	"github.com/relaymesh/relaymesh/internal/sharedobject/replica"
)

func init() {
	register(command{name: "so", summary: "shared objects: 'so watch URL --name N' or 'so set URL --name N --slot K --value JSON'", run: runSO})
}

// soPrimary starts the primary's shared-object and RPC layer, mounts its HTTP
// API, and returns it with a stop function that saves persistent objects.
//
// Persistent objects live in the bus's key-value bucket when the primary is
// on NATS (conn not nil and the bucket reachable), in files under --data
// otherwise.
func soPrimary(n *node, log *slog.Logger, conn *bus.Conn) (*origin.Server, func(), error) {
	sc := n.cfg.SharedObjects
	var store authority.Store
	if conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		kv, err := conn.SharedObjectsBucket(ctx)
		cancel()
		if err == nil {
			store = &kvstore.Store{KV: kv}
			log.Info("persistent shared objects in the bus", "bucket", bus.BucketSharedObjects)
		} else {
			log.Warn("shared-object bucket unreachable: keeping persistent objects in files", "dir", sc.Data, "err", err)
		}
	}
	if store == nil {
		fs, err := authority.NewFileStore(sc.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("shared_objects.data (--data): %w", err)
		}
		store = fs
	}
	lim, rules, err := soLimits(n.cfg.SharedObjects)
	if err != nil {
		return nil, nil, err
	}
	srv, err := origin.New(origin.Config{
		SharedObjects:  authority.Config{Store: store, Limits: lim, Rules: rules},
		FloodPerSecond: n.cfg.SharedObjects.FloodPerSecond,
		FloodBurst:     n.cfg.SharedObjects.FloodBurst,
		Webhooks:       sc.Webhooks,
		WebhookTimeout: sc.WebhookTimeout,
		Log:            log,
	})
	if err != nil {
		return nil, nil, err
	}
	srv.Routes(n.http.Mux)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(ctx) }()
	return srv, func() { cancel(); <-done }, nil
}

// soRelay starts a relay's shared-object and RPC layer with the limits and
// rules of the configuration's shared_objects section.
func soRelay(ctx context.Context, cfg config.Config, conn rtmp.ConnConfig, log *slog.Logger) (*edge.Relay, error) {
	lim, rules, err := soLimits(cfg.SharedObjects)
	if err != nil {
		return nil, err
	}
	return edge.New(ctx, edge.Config{RelayID: cfg.Relay.ID, Upstream: cfg.Relay.Upstream, Conn: conn, Log: log,
		Rules: rules, Limits: replica.Limits{Limits: lim.Limits},
		FloodPerSecond: cfg.SharedObjects.FloodPerSecond,
		FloodBurst:     cfg.SharedObjects.FloodBurst,
	})
}

// soLimits checks the shared_objects section and turns it into the
// authority's limits (a relay takes the per-client ones) and rules.
func soLimits(c config.SharedObjects) (authority.Limits, access.Rules, error) {
	for _, v := range []struct {
		name string
		n    float64
	}{
		{"objects_per_client", float64(c.ObjectsPerClient)}, {"objects_per_scope", float64(c.ObjectsPerScope)},
		{"slots_per_object", float64(c.SlotsPerObject)}, {"value_bytes", float64(c.ValueBytes)},
		{"object_bytes", float64(c.ObjectBytes)}, {"messages_per_second", c.MessagesPerSecond},
		{"burst", float64(c.Burst)}, {"flood_per_second", c.FloodPerSecond}, {"flood_burst", float64(c.FloodBurst)},
	} {
		if v.n < 0 {
			return authority.Limits{}, nil, fmt.Errorf("shared_objects.%s: %v is negative", v.name, v.n)
		}
	}
	if err := c.Rules.Validate(); err != nil {
		return authority.Limits{}, nil, fmt.Errorf("shared_objects.rules: %w", err)
	}
	lim := authority.Limits{
		Limits: access.Limits{
			ObjectsPerClient:  c.ObjectsPerClient,
			MessagesPerSecond: c.MessagesPerSecond,
			Burst:             c.Burst,
		},
		ObjectsPerScope: c.ObjectsPerScope,
		SlotsPerObject:  c.SlotsPerObject,
		ValueBytes:      c.ValueBytes,
		ObjectBytes:     c.ObjectBytes,
	}.WithDefaults()
	return lim, c.Rules, nil
}

// splitURL takes the rtmp:// URL that may come before the flags.
func splitURL(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func runSO(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "watch" && args[0] != "set") {
		return errors.New("usage: relaymesh so watch|set rtmp://HOST/APP/INSTANCE --name OBJECT [flags]")
	}
	verb := args[0]
	url, rest := splitURL(args[1:])
	fs := flag.NewFlagSet("so "+verb, flag.ContinueOnError)
	name := fs.String("name", "", "shared object name (required)")
	persistent := fs.Bool("persistent", false, "the object is persistent")
	slot := fs.String("slot", "", "set: slot to write")
	value := fs.String("value", "", "set: JSON value (null removes the slot)")
	timeout := fs.Duration("timeout", 10*time.Second, "set: how long to wait for the server")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if url == "" {
		url = fs.Arg(0)
	}
	if url == "" || *name == "" {
		return errors.New("an rtmp:// URL and --name are required")
	}
	log := slog.New(redact.Handler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	out := json.NewEncoder(os.Stdout)
	var cfg rpc.ClientConfig
	cfg.Log = log
	if verb == "watch" {
		cfg.OnObject = func(o *rpc.Object, m so.Message) { _ = out.Encode(describeSO(m)) }
	}
	dctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := rpc.Dial(dctx, url, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	o, err := c.Use(dctx, *name, *persistent)
	if err != nil {
		return err
	}
	if verb == "watch" {
		select {
		case <-ctx.Done():
			return nil
		case <-c.Done():
			return c.Err()
		}
	}
	if *slot == "" {
		return errors.New("set: --slot is required")
	}
	v, err := rpc.ParseJSON([]byte(*value))
	if err != nil {
		return fmt.Errorf("--value: %w", err)
	}
	if err := o.Set(dctx, *slot, v); err != nil {
		return err
	}
	slots, version := o.Slots()
	js, _ := rpc.ToJSON(slots)
	return out.Encode(map[string]any{"version": version, "slots": js})
}

// describeSO is a shared-object message as JSON for watchers.
func describeSO(m so.Message) map[string]any {
	evs := make([]map[string]any, 0, len(m.Events))
	for _, e := range m.Events {
		d := map[string]any{"type": e.Type.String()}
		switch e.Type {
		case so.EventChange:
			d["key"] = e.Key
			d["value"], _ = rpc.ToJSON(e.Value)
		case so.EventSuccess, so.EventRemove:
			d["key"] = e.Key
		case so.EventSendMessage:
			d["handler"] = e.Handler
			d["args"], _ = rpc.ToJSONList(e.Args)
		case so.EventStatus:
			d["code"] = e.Code
		}
		evs = append(evs, d)
	}
	return map[string]any{"object": m.Name, "version": m.Version, "events": evs}
}

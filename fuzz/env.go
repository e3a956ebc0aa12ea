package fuzz

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/workload"
	bf16scatter "github.com/kvharness/kvharness/plugins/bf16scatter/kernel"
	fp8store "github.com/kvharness/kvharness/plugins/fp8store/kernel"
	fusedstore "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
)

// Geometry of the fuzzed pool: small enough that a case costs well under a
// millisecond, large enough for several pages.
const (
	Slots       = 1024
	PageSize    = 64
	MaxCapacity = 64
)

// layoutOrder is the order the input's first byte picks layouts in.
var layoutOrder = []string{"bf16", "fp8-paged", "fp8-rows"}

var inProcess = map[string]sdk.Plugin{
	"fusedstore": fusedstore.Plugin, "fp8store": fp8store.Plugin, "bf16scatter": bf16scatter.Plugin,
}

// Env is what a fuzz worker keeps between inputs: the plugin, restarted
// after a fault, and one target per layout it supports.
type Env struct {
	Plugin, Variant, Mode string

	dir     *pool.Dir
	p       *plugin.Plugin
	layouts []*layout.Layout
	targets []*check.Target
}

// NewEnv reads the plugin choice from the environment.
func NewEnv() (*Env, error) {
	e := &Env{Plugin: os.Getenv("KVHARNESS_PLUGIN"), Variant: os.Getenv("KVHARNESS_VARIANT"), Mode: os.Getenv("KVHARNESS_FUZZ_MODE")}
	if e.Plugin == "" {
		e.Plugin = "fusedstore"
	}
	if e.Mode == "" {
		e.Mode = "out-of-process"
	}
	if e.Mode != "out-of-process" && e.Mode != "in-process" {
		return nil, fmt.Errorf("KVHARNESS_FUZZ_MODE=%q: want out-of-process or in-process", e.Mode)
	}
	if _, ok := inProcess[e.Plugin]; e.Mode == "in-process" && !ok {
		return nil, fmt.Errorf("KVHARNESS_FUZZ_MODE=in-process needs a bundled Go plugin (%v), not %q", plugin.Bundled, e.Plugin)
	}
	dir, err := pool.OpenDir()
	if err != nil {
		return nil, err
	}
	e.dir = dir
	return e, nil
}

// Close stops the plugin and removes the run directory.
func (e *Env) Close() {
	e.reset()
	e.dir.Close()
}

// reset drops the plugin and targets; the next input starts them again.
func (e *Env) reset() {
	for _, t := range e.targets {
		if t != nil {
			t.Mem.Close()
		}
	}
	if e.p != nil {
		e.p.Close()
	}
	e.p, e.targets, e.layouts = nil, nil, nil
}

func (e *Env) start(ctx context.Context) error {
	if e.Mode == "in-process" {
		e.p = plugin.InProcess(e.Plugin, sdk.NewServer(inProcess[e.Plugin]))
	} else {
		path, err := plugin.Resolve(e.Plugin)
		if err != nil {
			return err
		}
		if e.p, err = plugin.Start(ctx, e.Plugin, path, plugin.Options{Dir: e.dir}); err != nil {
			return err
		}
	}
	for _, name := range layoutOrder {
		l, err := layout.Builtin(name, layout.DefaultHeadDim, PageSize)
		if err != nil {
			return err
		}
		e.layouts = append(e.layouts, l)
	}
	e.targets = make([]*check.Target, len(e.layouts))
	return nil
}

// target returns the target for the layout the input's first byte picks
// among those the plugin supports.
func (e *Env) target(ctx context.Context, pick byte) (*check.Target, error) {
	if e.p == nil {
		if err := e.start(ctx); err != nil {
			return nil, err
		}
	}
	for i := range len(e.layouts) {
		k := (int(pick) + i) % len(e.layouts)
		if e.targets[k] != nil {
			return e.targets[k], nil
		}
		t, err := check.Open(ctx, e.p, e.dir, check.Config{Variant: e.Variant, Layout: e.layouts[k],
			Slots: Slots, MaxCapacity: MaxCapacity, Seed: 1})
		if err == nil {
			e.targets[k] = t
			return t, nil
		}
		if !isUnsupported(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("plugin %s supports none of %v", e.Plugin, layoutOrder)
}

func isUnsupported(err error) bool { return errors.Is(err, check.ErrUnsupported) }

// Check decodes one input and checks it. A plugin fault resets the
// environment so that the next input gets a fresh plugin.
func (e *Env) Check(ctx context.Context, data []byte) (*check.Target, *check.Result, error) {
	var pick byte
	if len(data) > 0 {
		pick, data = data[0], data[1:]
	}
	t, err := e.target(ctx, pick)
	if err != nil {
		e.reset()
		return nil, nil, err
	}
	c := workload.Decode(data, Slots, PageSize, MaxCapacity)
	res, err := t.Check(ctx, c)
	if err != nil {
		e.reset()
		return t, &check.Result{Case: c}, err
	}
	return t, res, nil
}

package check

import (
	"context"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
)

// ReadConfig says what to attach for reads. The maxima size staging.
type ReadConfig struct {
	Variant     string
	Layout      *layout.Layout
	Slots       int
	MaxRequests int // default 8
	MaxTokens   int // all lists of a case together; default 256
	MaxK        int // default 64
	Seed        int64
	Backend     Backend // nil: host shared memory
	Options     oracle.ReadOptions
}

func (c *ReadConfig) defaults() {
	if c.Backend == nil {
		c.Backend = SHM{}
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = 8
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 256
	}
	if c.MaxK <= 0 {
		c.MaxK = 64
	}
}

// ReadTarget is a plugin's read kernel attached to an arena of one pool
// and a staging region, both filled with the seeded background. Each case
// writes its keys into the pool, runs twice, and leaves pool and staging
// as it found them.
type ReadTarget struct {
	ReadConfig
	Plugin   *plugin.Plugin
	Mem      pool.Memory
	Geometry pool.Geometry
	Declared oracle.Declared
	// GeometryViolation is set when the plugin's declared geometry
	// differs from the layout's.
	GeometryViolation *oracle.Violation
	staging           readStaging
}

// OpenRead describes the plugin, checks that it reads the layout, plans
// and fills the arena and attaches the plugin.
func OpenRead(ctx context.Context, p *plugin.Plugin, dir *pool.Dir, cfg ReadConfig) (*ReadTarget, error) {
	cfg.defaults()
	t := &ReadTarget{ReadConfig: cfg, Plugin: p}
	if err := t.describe(ctx); err != nil {
		return nil, err
	}
	if err := t.plan(dir); err != nil {
		return nil, err
	}
	if err := t.attach(ctx); err != nil {
		t.Mem.Close()
		return nil, err
	}
	return t, nil
}

func (t *ReadTarget) describe(ctx context.Context) error {
	var err error
	t.Declared, t.GeometryViolation, err = declared(ctx, t.Plugin, "read", t.Variant, t.Layout)
	return err
}

// plan lays out one pool and the staging windows, and fills both with the
// background, so that any byte a read changes shows in Changed.
func (t *ReadTarget) plan(dir *pool.Dir) error {
	t.staging = planReadStaging(t.ReadConfig)
	g, err := pool.Plan([]pool.Spec{{Name: "read", Layout: t.Layout, Slots: t.Slots}}, t.staging.size)
	if err != nil {
		return err
	}
	mem, err := t.Backend.NewMemory(dir, g.Size, t.Plugin)
	if err != nil {
		return err
	}
	for _, w := range []pool.Window{g.Regions[0].Span(), g.Staging} {
		if err := mem.Fill(w, uint64(t.Seed)); err != nil {
			mem.Close()
			return err
		}
	}
	t.staging.base = g.Staging.Off
	t.Geometry, t.Mem = g, mem
	return nil
}

// Region is the pool the oracle judges.
func (t *ReadTarget) Region() pool.Region { return t.Geometry.Regions[0] }

func (t *ReadTarget) attach(ctx context.Context) error {
	_, err := t.Plugin.Attach(ctx, t, AttachRequest(t.Mem, t.Geometry, t.Variant))
	return err
}

// Close detaches the plugin and frees the arena; the plugin keeps running.
func (t *ReadTarget) Close(ctx context.Context) { Release(ctx, t.Plugin, t, t.Mem) }

package pdasync

import (
	"context"
	"fmt"
	"os"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Name is the kernel kind on the wire.
const Name protocol.Kernel = "pdasync"

// Kind is the asynchronous prefill → decode transfer kind.
var Kind = kind.Kind{
	Name:   Name,
	Check:  check,
	Replay: replay,
	Decode: kind.Decoder(Name, func() *Case { return &Case{} }),
	Fuzz:   fuzzing.Lane(FuzzTarget),
	Bench:  &Bench,
}

// The default geometry of a suite: one DeepSeek-V4-like layer (bf16 KV, a
// state carved from its allocation, fp8-paged index-K on its own page
// table: three buffers, so up to three components) of 20 pages a pool:
// room for three rooms and their successors, small enough that the decode
// pools are read after every step.
const (
	DefaultLayers = 1
	DefaultPages  = 20
)

// SuiteConfig shapes a suite beyond the common settings.
type SuiteConfig struct {
	Geometry pd.Geometry   // zero: DefaultGeometry(DefaultLayers, DefaultPages)
	Profiles []string      // nil: Profiles
	Decode   arena.Backend // the decode arena's backend; nil: the prefill's (Params.Backend)
	// Spawn starts a row's decode process beside its prefill process; nil:
	// another process of the prefill's plugin (plugin.Plugin.Spawn).
	Spawn func(ctx context.Context, prefill *plugin.Plugin) (*plugin.Plugin, error)
	// Shapes, when set, is each profile's head dim and page size: its
	// row runs over Geometry reshaped to it (a check draws them).
	Shapes map[string]workload.Shape
	// Far runs the edges row over pools that reach past 4 GiB of byte
	// offsets (pd.FarPages), its rooms drawn at 2 GiB and 4 GiB too.
	Far bool
}

// geometryOf is a profile's geometry: g, reshaped to the profile's shape
// when sc gives one, and far for the edges row when sc reaches far.
func (sc SuiteConfig) geometryOf(g pd.Geometry, profile string) pd.Geometry {
	if x, ok := sc.Shapes[profile]; ok {
		g = g.Reshaped(x.HeadDim, x.PageSize)
	}
	if sc.Far && profile == ProfileEdges {
		g = g.Far()
	}
	return g
}

// Suite is the pdasync properties over profiles, one row and one pair of
// processes each (the row's plugin as prefill, a process spawned from it
// as decode); every row's layout is the first buffer's.
func Suite(s *kind.Session, p kind.Params, sc SuiteConfig) (*property.Suite[*System, *Case, *Result], error) {
	g, l, err := pd.SuiteGeometry(sc.Geometry, DefaultLayers, DefaultPages)
	if err != nil {
		return nil, err
	}
	suite := kind.NewSuite[*System, *Case, *Result](s, p)
	cfg := Config{Variant: p.Variant, Seed: p.Seed, PrefillBackend: p.Backend, DecodeBackend: sc.Decode}
	spawn := sc.Spawn
	if spawn == nil {
		spawn = func(ctx context.Context, p *plugin.Plugin) (*plugin.Plugin, error) { return p.Spawn(ctx) }
	}
	suite.Rows = kind.ProfileRows[*Case, *Result](l, sc.Profiles, Profiles,
		func(ctx context.Context, pl *plugin.Plugin, profile string) (*System, error) {
			decode, err := spawn(ctx, pl)
			if err != nil {
				return nil, fmt.Errorf("start the decode process: %w", err)
			}
			g := sc.geometryOf(g, profile)
			sys := NewSystem(pl, decode, s.Dir, cfg, &Gen{Geometry: g, Profile: profile})
			sys.OwnsDecode = true
			return kind.Warmed(ctx, sys, g)
		})
	for i, r := range suite.Rows {
		if suite.Rows[i].Layout, err = sc.geometryOf(g, r.Label).Layout(0); err != nil {
			return nil, err
		}
	}
	return suite, nil
}

// FlagGeometry is the geometry a check run's flags ask for: the default
// layers, with as many pages as the flags' slots fill (8 to DefaultPages),
// their page size and head dimension.
func FlagGeometry(p kind.Params) (pd.Geometry, error) {
	return pd.SizedGeometry(Name, DefaultLayers, min(max(p.Slots/p.PageSize, 8), DefaultPages), p.PageSize, p.HeadDim)
}

// OneGPUEnv, when set, keeps both arenas on one GPU on a machine with
// several.
const OneGPUEnv = "KVHARNESS_PDASYNC_ONE_GPU"

// NextGPU is where the decode arena lives: on a machine with several
// GPUs, the one after the prefill's (every copy is then a peer copy, over
// NVLink on an H200 pair); else the prefill's backend. The function
// returned releases the device.
func NextGPU(b arena.Backend) (arena.Backend, func(), error) {
	none := func() {}
	c, ok := b.(arena.CUDA)
	if !ok || os.Getenv(OneGPUEnv) != "" {
		return b, none, nil
	}
	n, err := cuda.DeviceCount()
	if err != nil || n < 2 {
		return b, none, nil
	}
	dev, err := cuda.Open((c.Dev.Ordinal() + 1) % n)
	if err != nil {
		return nil, none, fmt.Errorf("open the decode GPU: %w", err)
	}
	return arena.CUDA{Dev: dev}, func() { dev.Close() }, nil
}

// Where says where the two arenas live, for a report's title.
func Where(prefill, decode arena.Backend) string {
	p, d := placeOf(prefill), placeOf(decode)
	if p == d {
		return "both arenas on " + p
	}
	return fmt.Sprintf("prefill arena on %s, decode arena on %s (peer copies)", p, d)
}

func placeOf(b arena.Backend) string {
	if c, ok := b.(arena.CUDA); ok {
		return fmt.Sprintf("GPU %d", c.Dev.Ordinal())
	}
	return "host shared memory"
}

func check(ctx context.Context, s *kind.Session, p kind.Params) (*report.Run, error) {
	g, err := FlagGeometry(p)
	if err != nil {
		return nil, err
	}
	prefill := p.Backend
	decode, release, err := NextGPU(prefill)
	if err != nil {
		return nil, err
	}
	defer release()
	sc := SuiteConfig{Geometry: g, Decode: decode, Far: pd.Reaches(p, s)}
	ls, err := g.Layouts()
	if err != nil {
		return nil, err
	}
	sh, err := p.Spaces(ctx, s, ls)
	if err != nil {
		return nil, err
	}
	if sc.Shapes, err = sh.Profiles(ctx, s, p, ls, nil, Profiles); err != nil {
		return nil, err
	}
	suite, err := Suite(s, p, sc)
	if err != nil {
		return nil, err
	}
	h := pd.Header(p, s, g, sh)
	h.JSON = append(h.JSON, report.Field{Key: "arenas", Value: Where(prefill, decode)})
	h.About += ", " + Where(prefill, decode)
	if h.Far = sc.Far; h.Far {
		h.Coverage = append(h.Coverage, pd.FarLine(p.Place().OnDevice()))
	}
	return kind.RunSuite(ctx, suite, Schema, h)
}

func replay(ctx context.Context, s *kind.Session, r *report.Repro, l *layout.Layout, b arena.Backend) (*report.Failure, error) {
	c := r.Case.(*Case)
	decode, release, err := NextGPU(b) // as the check placed them
	if err != nil {
		return nil, err
	}
	defer release()
	sys, err := Spawned(ctx, s.Plugin, s.Dir, Config{Variant: r.Variant, Geometry: c.Geometry, Seed: r.BackgroundSeed,
		PrefillBackend: b, DecodeBackend: decode}, nil)
	if err != nil {
		return nil, err
	}
	defer sys.Close(ctx)
	return kind.Replay(ctx, sys, Schema, s.ReplayHeader(r, b), r, l, c, string(Name))
}

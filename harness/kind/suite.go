package kind

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// NewSuite is a suite with no rows yet, set from a check run's common
// settings and the session's plugin. It keeps a spare process for a
// failure's fresh-process check on a GPU, where a process's start makes a
// CUDA context, and for a plugin slow to start anywhere (Python). A
// mutant hunt (StopAtFirst) keeps none from the start: its time to kill
// would share the GPU with the spare's context, and its first failure
// starts one anyway (property.Sparer). Stress is left to the kinds whose
// rows run under it: they set Suite.Stress from p.Stress.
func NewSuite[T property.Target, C any, R property.Result](s *Session, p Params) *property.Suite[T, C, R] {
	return &property.Suite[T, C, R]{Plugin: s.Plugin, Cases: p.Cases, Seed: p.Seed, MaxFaults: p.MaxFaults,
		StopAtFirst: p.StopAtFirst, Shard: p.Shard, Jobs: p.Jobs, Spawn: s.Spawn,
		Spare: (p.Place().OnDevice() || s.Plugin.SlowStart()) && !p.StopAtFirst}
}

// RunSuite runs a suite and reports its verdicts under schema, with
// header h: a check's last step.
func RunSuite[T property.Target, C workload.Case, R report.Result](ctx context.Context, suite *property.Suite[T, C, R],
	schema *report.Schema[C, R], h report.Header) (*report.Run, error) {
	vs, runErr := suite.Run(ctx)
	return report.Build(schema, h, vs, runErr)
}

// GeometryHeader is the header of a check run over one geometry g that
// the kind brings: the JSON report records it, the title says it.
func (p Params) GeometryHeader(s *Session, g fmt.Stringer) report.Header {
	h := p.Header(s)
	h.JSON, h.About = report.Object{{Key: "geometry", Value: g}}, g.String()
	return h
}

// ProfileSystem is a system that is its own target: the kinds whose rows
// are case profiles open one per row and check it directly.
type ProfileSystem[C any, R property.Result] interface {
	property.Target
	property.System[C, R]
}

// ProfileRows is a row per profile (defaults when profiles is empty),
// labelled and keyed by it, every row's layout l: the rows of the kinds
// that bring their own geometry. open opens a row's system on a plugin.
func ProfileRows[C any, R property.Result, S ProfileSystem[C, R]](l *layout.Layout, profiles, defaults []string,
	open func(ctx context.Context, pl *plugin.Plugin, profile string) (S, error)) []property.Row[S, C, R] {
	if len(profiles) == 0 {
		profiles = defaults
	}
	rows := make([]property.Row[S, C, R], 0, len(profiles))
	for _, profile := range profiles {
		rows = append(rows, property.Row[S, C, R]{Layout: l, Label: profile, Key: profile,
			Open:   func(ctx context.Context, pl *plugin.Plugin) (S, error) { return open(ctx, pl, profile) },
			System: func(sys S) property.System[C, R] { return sys }})
	}
	return rows
}

// Warmed returns sys once it has opened its target for geometry g; else
// it closes sys and returns the error, so that a system whose target
// cannot open (a plugin without the kernel: target.ErrUnsupported) leaves
// nothing behind.
func Warmed[S interface {
	property.Target
	Target(context.Context, G) (T, error)
}, G, T any](ctx context.Context, sys S, g G) (S, error) {
	if _, err := sys.Target(ctx, g); err != nil {
		sys.Close(ctx)
		var zero S
		return zero, err
	}
	return sys, nil
}

// CheckOn is the Check of a system whose cases bring their own geometry
// (transfer, load, pdasync): c is checked by check on target(g), the
// target of the case's geometry g, which the system opens or keeps.
func CheckOn[G, T, C, R any](ctx context.Context, target func(context.Context, G) (T, error),
	check func(T, context.Context, C) (R, error), g G, c C) (R, error) {
	t, err := target(ctx, g)
	if err != nil {
		var zero R
		return zero, err
	}
	return check(t, ctx, c)
}

// ReplayHeader is the report header of a repro file's replay on the
// session's plugin: the file's variant and background seed. Kinds whose
// header names the pool's slots set them from r.Slots.
func (s *Session) ReplayHeader(r *report.Repro, b arena.Backend) report.Header {
	ran := s.ran(b, r.Graph)
	ran.HeadDim, ran.PageSize, ran.MaxCapacity, ran.SlotBits = r.HeadDim, r.PageSize, r.MaxCapacity, r.SlotBits
	return report.Header{Plugin: s.pluginName(), Version: s.pluginVersion(), Variant: r.Variant, PluginArg: s.PluginArg,
		Seed: r.BackgroundSeed, Backend: b.Place().String(), Graph: r.Graph, Ran: ran}
}

// Decoder is a Kind's Decode for cases of type C: zero gives a zero case
// to read into (DecodeCase).
func Decoder[C interface {
	workload.Case
	Validate(slots int) error
}](kernel protocol.Kernel, zero func() C) func(data json.RawMessage, slots int) (workload.Case, error) {
	return func(data json.RawMessage, slots int) (workload.Case, error) {
		return DecodeCase(kernel, data, slots, zero())
	}
}

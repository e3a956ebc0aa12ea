package report

import (
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/workload"
)

// FailedRepro is the repro file of v's failure: the plugin as the run
// named it, the failing case on layout l with slots tokens per pool, and
// how it was found with vs, the minimal case's violations, cut to
// MaxViolations. Each kind's Repro says which layout and slots its case
// replays on; the rest is the same for all.
func FailedRepro[C workload.Case, R property.Result](kernel protocol.Kernel, h Header, v property.Verdict[C, R], l *layout.Layout, slots int, vs []oracle.Violation) *Repro {
	fl := v.Outcome.Failure
	if len(vs) > MaxViolations {
		vs = vs[:MaxViolations]
	}
	ran := h.Ran
	ran.HeadDim, ran.PageSize = l.HeadDim, l.PageSize // the row's own shape, drawn or pinned
	return &Repro{Version: ReproVersion, Kernel: kernel, Plugin: h.PluginArg, Variant: h.Variant, Ran: ran,
		Layout: l.JSON(), Slots: slots, BackgroundSeed: h.Seed, Case: fl.Case,
		Found: &Found{Property: fl.Property, Flaky: fl.Flaky, Seed: v.Seed, CaseIndex: v.Outcome.Cases,
			Shrinks: fl.Shrinks, Reruns: Intermittent(fl.Reruns), Violations: vs}}
}

// VariantOrNone is the run's variant as titles print it: "none" for the
// plugin's own kernel.
func (h Header) VariantOrNone() string {
	if h.Variant == "" {
		return "none"
	}
	return h.Variant
}

// A ReproGeometry is the geometry a case carries when its kind brings its
// own (transfers, loads): it says the layout and the slots the repro file
// records, the first buffer's layout and the tokens of one pool, so that
// the common header reads as it does for stores.
type ReproGeometry interface {
	Layout(buffer int) (*layout.Layout, error)
	PoolTokens() int
}

// GeometryRepro is FailedRepro of a case that carries geometry g, with
// the violations of its minimal result.
func GeometryRepro[C workload.Case, R interface {
	property.Result
	Generic() []oracle.Violation
}](kernel protocol.Kernel, h Header, v property.Verdict[C, R], g ReproGeometry) (*Repro, error) {
	l, err := g.Layout(0)
	if err != nil {
		return nil, err
	}
	return FailedRepro(kernel, h, v, l, g.PoolTokens(), v.Outcome.Failure.Minimal.Generic()), nil
}

// LabeledGeometryRepro is GeometryRepro for a kind whose rows are its
// profiles: the file is named after the row's label too, so two rows'
// findings of one plugin do not share a name.
func LabeledGeometryRepro[C workload.Case, R interface {
	property.Result
	Generic() []oracle.Violation
}](kernel protocol.Kernel, h Header, v property.Verdict[C, R], g ReproGeometry) (*Repro, error) {
	r, err := GeometryRepro(kernel, h, v, g)
	if err != nil {
		return nil, err
	}
	r.Tag = v.Label
	return r, nil
}

// intermittent is what a repro's Found records of the re-runs confirming
// took: nothing for the usual one.
func Intermittent(reruns int) int {
	if reruns > 1 {
		return reruns
	}
	return 0
}

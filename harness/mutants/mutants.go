// Package mutants proves the harness's power: it runs the property suite
// against every correct plugin (controls, which must pass) and every named
// mutant (which must be killed), and measures how fast each one dies.
//
// Budgets escalate: every layout × padding combination first gets a few
// cases, then more, so a mutant that only one combination can see (say
// minus1-wraps, visible under the minus1 convention alone) is killed in
// the first round instead of after the other combinations' full budgets.
package mutants

import (
	"context"
	"slices"
	"time"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Subject is one plugin build under test.
type Subject struct {
	// Plugin is how the run named the plugin (a bundled name, a path, a
	// manifest): what opens it; Name is the plugin's own name, what
	// tables show.
	Plugin, Name string
	Kernel       protocol.Kernel // whose properties judge it
	Variant      string          // "" for the plugin as shipped
	Doc          string
	Mutant       bool // must be killed; otherwise a control that must pass
	// Layouts are the layouts a variant is checked on instead of the
	// run's: where its bug lives (plugin.Variant.Layouts); nil: the run's.
	Layouts []string
	// Also are the layouts a control is checked on beside the run's:
	// every layout a variant of its kernel names, so that each layout a
	// mutant dies on has a control passing there.
	Also []string
}

// Result is a subject's fate.
type Result struct {
	Subject
	Killed   bool // a mutant was caught, or a control failed
	Property oracle.Kind
	Layout   string
	Label    string        // the suite row that killed it: for stores, the padding
	Cases    int           // cases run until the kill (or in total for survivors)
	ToKill   time.Duration // wall time from the suite's start to the first failure; kvharness mutants adds the wait for the subject's process
	Case     workload.Case
	Err      error // plugin fault or setup error
}

// OK reports whether the subject behaved as it must.
func (r Result) OK() bool { return r.Err == nil && r.Killed == r.Mutant }

// Config shapes a mutants run.
type Config struct {
	Cases      int // final per-combination budget for mutants and controls
	Seed       int64
	kind.Setup // Slots 0: each kernel's default; Graph only for kinds that replay graphs
	// Value is how mutants' fp8 values are judged. Controls are judged by
	// their declared recipes whatever it says: a correct kernel whose
	// arithmetic is not the reference's (PyTorch's scale) is no less
	// correct under exact judgement, only not bit-exact.
	Value layout.Mode
}

// ValueOf is how subject s's values are judged under cfg.
func (cfg Config) ValueOf(s Subject) layout.Mode {
	if !s.Mutant {
		return layout.ByRecipe
	}
	return cfg.Value
}

// Subjects lists a plugin's control (unless it is a reference bug) and its
// variants, from its own description.
//
// Each kernel the plugin serves gets a control; each variant is judged by
// the properties of the kernel it changes.
func Subjects(name string, d *plugin.Description) []Subject {
	b, _ := plugin.BundledByName(name)
	doc, ref := b.Bug, b.Role == plugin.Reference
	var out []Subject
	for _, k := range d.Kernels {
		c := Subject{Plugin: name, Name: d.Name, Kernel: protocol.Kernel(k), Doc: d.Doc, Mutant: ref}
		if ref {
			c.Doc = doc
		}
		out = append(out, c)
	}
	for _, v := range d.Variants {
		k := v.Kernel
		if k == "" && len(d.Kernels) > 0 { // a plugin built before the SDKs named every variant's kernel
			k = d.Kernels[0]
		}
		out = append(out, Subject{Plugin: name, Name: d.Name, Kernel: protocol.Kernel(k), Variant: v.Name, Doc: v.Doc, Mutant: !v.Correct,
			Layouts: v.Layouts})
	}
	for i, c := range out[:len(d.Kernels)] {
		if c.Mutant {
			continue // a reference bug's build: no control
		}
		for _, s := range out[len(d.Kernels):] {
			if s.Kernel != c.Kernel {
				continue
			}
			for _, l := range s.Layouts {
				if !slices.Contains(out[i].Also, l) {
					out[i].Also = append(out[i].Also, l)
				}
			}
		}
	}
	return out
}

// SuiteFunc runs one subject's properties with a budget of cases per
// row and a seed, each case stress times at once (0: once), stopping at
// the first failure.
type SuiteFunc func(ctx context.Context, cases int, seed int64, stress int) (*report.Run, error)

// survivorStress is how many times at once a mutant that survived every
// budget has each case run in one last round: a race that a lone run
// passes fails under the load of its siblings.
const (
	survivorStress = 8
	survivorCases  = 100
)

// Run tests one subject with its kernel's suite.
func Run(ctx context.Context, s Subject, cfg Config, suite SuiteFunc) Result {
	res := Result{Subject: s}
	start := time.Now()
	rounds := []round{{cases: cfg.Cases}} // a control gets the whole budget once
	if s.Mutant {
		rounds = escalation(cfg.Cases)
	}
	for i, r := range rounds {
		n, stress := r.cases, r.stress
		run, err := suite(ctx, n, cfg.Seed+int64(1000*i), stress)
		if err == nil {
			err = run.Err
		}
		if run != nil {
			res.Cases += casesOf(run)
		}
		if err != nil {
			res.Err = err
			return res
		}
		if row, ok := firstFailure(run); ok {
			f := row.Failure
			res.Killed, res.Property, res.Label = true, f.Property, row.Label
			if row.Layout != nil {
				res.Layout = row.Layout.Name
			}
			res.Case = f.Case
			res.ToKill = time.Since(start) - row.Elapsed + row.ToFailure
			return res
		}
	}
	res.ToKill = time.Since(start)
	return res
}

// round is one run of a subject's suite: cases per combination, each
// stress times at once.
type round struct{ cases, stress int }

// escalation is a mutant's rounds: 20 and 200 cases per combination where
// they are below the final budget, the final budget, and, for a mutant
// that survived them all, a last round under stress.
func escalation(cases int) []round {
	var out []round
	for _, n := range []int{20, 200} {
		if n < cases {
			out = append(out, round{cases: n})
		}
	}
	return append(out, round{cases: cases}, round{cases: min(cases, survivorCases), stress: survivorStress})
}

func casesOf(run *report.Run) int {
	n := 0
	for _, row := range run.Rows {
		n += row.Cases
	}
	return n
}

func firstFailure(run *report.Run) (report.Row, bool) {
	for _, row := range run.Rows {
		if row.Failure != nil {
			return row, true
		}
	}
	return report.Row{}, false
}

// Shown is the subject's plugin as tables name it: its own name, or how
// the run named it when it has none.
func (s Subject) Shown() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Plugin
}

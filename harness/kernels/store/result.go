package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
)

// Result is the verdict on one store case.
type Result struct {
	Violations []oracle.Violation
	// Crash is the plugin's death while it ran the case, when it died:
	// the case's one violation is then a crash.
	Crash *plugin.Fault
	// Findings are what compute-sanitizer reported while the case ran
	// (check --sanitize), one sanitizer violation each, in order.
	Findings []plugin.Finding
	// Judged is what the case's values were judged by: the layout with
	// the declared recipe, and the mode (a repro file records both).
	Judged *Judgement
	// raceHits counts the case's two runs that showed a race (RaceShown).
	raceHits int
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// addFindings adds the sanitizer's findings as violations.
func (r *Result) addFindings(fs []plugin.Finding) {
	for _, f := range fs {
		r.Findings = append(r.Findings, f)
		r.Violations = append(r.Violations, oracle.Violation{Kind: oracle.Sanitizer, Row: oracle.NoRow, Detail: f.String()})
	}
}

// Kinds are the store's violation kinds in report order: a crash first
// (nothing else was seen), then where a wrong byte landed (a padded row's
// target, a guard, the inputs, a stride's misplacement, someone else's
// slot) before what is wrong inside a row's footprint, then the
// properties that compare runs, and last what a sanitizer saw that the
// pool's bytes did not show.
var Kinds = []oracle.Kind{oracle.Crash, oracle.Padding, oracle.Guard, oracle.Staging, oracle.Stride, oracle.Alias, oracle.Value,
	oracle.Missing, oracle.Geometry, oracle.Determinism, oracle.Differential, oracle.Sanitizer}

// crashed is the result of a case the plugin died running: its one
// violation says how, with the panic's message when the plugin wrote one
// (the report lists its frames below).
func crashed(f *plugin.Fault) *Result {
	how := f.Call + ": " + f.Detail
	detail := "the plugin's process died running this case (" + how + ")"
	if f.Panic != nil {
		detail = "the plugin's process died running this case: " + strings.ReplaceAll(f.Panic.Message, "\n", " ") + " (" + how + ")"
	}
	return &Result{Crash: f, Violations: []oracle.Violation{{Kind: oracle.Crash, Row: oracle.NoRow, Detail: detail}}}
}

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Has reports whether a violation of kind k was found.
func (r *Result) Has(k oracle.Kind) bool { return oracle.HasKind(r.Violations, k) }

// Primary is the kind a report leads with: the first in Kinds order.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }

// NumViolations counts the violations.
func (r *Result) NumViolations() int { return len(r.Violations) }

// Check runs c as given, again on a copy of the pool, and with its valid
// rows alone on another copy, in one round trip, and classifies what it
// finds. It scans the whole of each pool: its verdict is exact, whatever
// the plugin wrote and wherever (Target.CheckAhead's are proved so).
func (t *Target) Check(ctx context.Context, c *Case) (*Result, error) {
	t.stopAhead(ctx)
	start := time.Now()
	sc := t.newOracle(c)
	t.clock("prepare", start)
	deltas, staging, err := t.runs(ctx, sc.Rows(), runsOf(t.exact, c)...)
	if err != nil {
		return nil, err
	}
	defer t.clock("classify", time.Now())
	res := t.verdict(sc, deltas, staging)
	res.addFindings(t.Plugin.SanitizerFindings())
	return res, nil
}

// newOracle is c's oracle on the target, judging values in its mode.
func (t *Target) newOracle(c *Case) *Oracle {
	sc := buildOracle(t.Layout, t.Region(), uint64(t.Seed), c, t.Declared, t.Inputs, &t.rows)
	sc.Mode = t.Value
	return sc
}

// runsOf are the runs that check c on a set: as given, again, and, when
// some rows are padding, its valid rows alone.
func runsOf(set int, c *Case) []run {
	batch := []run{{set, poolCase, c}, {set, poolRepeat, c}}
	if c.Valid > 0 && c.Valid < c.Capacity() {
		batch = append(batch, run{set, poolUnpadded, c.Unpadded()})
	}
	return batch
}

// verdict classifies what the runs of runsOf left: the first run against
// the reference, the second against the first (determinism), the
// unpadded one against the first (differential); staging is what the
// runs wrote into their inputs. A sanitizer's findings are the caller's
// to add: only an exact check knows which case they belong to.
func (t *Target) verdict(sc *Oracle, deltas []oracle.Delta, staging []oracle.Violation) *Result {
	c := sc.Case
	first, again := deltas[0], deltas[1]
	unpadded := first // without padded rows a case is its own unpadded twin
	switch {
	case len(deltas) > 2:
		unpadded = deltas[2]
	case c.Valid == 0:
		unpadded = oracle.Delta{} // storing no rows changes nothing
	}
	res := &Result{Judged: &Judgement{Layout: t.Layout, Mode: t.Value, SlotBits: t.Declared.SlotBits}}
	if t.GeometryViolation != nil {
		res.Violations = append(res.Violations, *t.GeometryViolation)
	}
	res.Violations = append(res.Violations, staging...)
	res.Violations = append(res.Violations, sc.Check(first)...)
	res.raceHits = 2 * b2i(hasRace(res.Violations)) // both runs, when they agree
	if !first.Equal(again) {
		more, shown := raceIn(sc, again, res.Violations) // race.go
		res.Violations = append(res.Violations, more...)
		res.raceHits = b2i(res.raceHits > 0) + b2i(shown)
	}
	if !first.Equal(again) {
		res.Violations = append(res.Violations, oracle.Compare(oracle.Determinism, first, again,
			"running the same case twice left different bytes"))
	}
	if !first.Equal(unpadded) {
		res.Violations = append(res.Violations, oracle.Compare(oracle.Differential, unpadded, first,
			fmt.Sprintf("the padded run (C=%d) differs from a run of its %d valid rows alone", c.Capacity(), c.Valid)))
	}
	return res
}

package kind

import (
	"context"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Replay checks a repro file's case twice on sys and presents a failure
// the way a property run presents one, so that repro and check print the
// same report; nil when the case passes.
func Replay[C workload.Case, R report.Result](ctx context.Context, sys property.System[C, R], s *report.Schema[C, R],
	h report.Header, r *report.Repro, l *layout.Layout, c C, label string) (*report.Failure, error) {
	first, err := sys.Check(ctx, c)
	if err != nil || !first.Failed() {
		return nil, err
	}
	again, err := sys.Check(ctx, c)
	if err != nil {
		return nil, err
	}
	f := &property.Failure[C, R]{Original: first, Minimal: first, Rerun: again, Reran: true, Case: c, Property: first.Primary()}
	f.Flaky = !again.Has(f.Property)
	seed, index := int64(0), 1
	if r.Found != nil {
		seed, index = r.Found.Seed, r.Found.CaseIndex
	}
	v := property.Verdict[C, R]{Layout: l, Label: label, Seed: seed, Outcome: &property.Outcome[C, R]{Cases: index, Failure: f}}
	run, err := report.Build(s, h, []property.Verdict[C, R]{v}, nil)
	if err != nil {
		return nil, err
	}
	fl := run.Rows[0].Failure
	fl.Replayed = true
	return fl, nil
}

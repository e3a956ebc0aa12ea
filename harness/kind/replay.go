package kind

import (
	"context"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// Replay checks a repro file's case and presents a failure the way a
// property run presents one, so that repro and check print the same
// report; nil when the case passes. A failing case is checked once more
// to confirm it; with r.Count above one the case is checked that many
// times and the failure says how many of them failed (flaky when not
// all). A crash of the plugin is the case's failure, as in a check run.
func Replay[C workload.Case, R report.Result](ctx context.Context, sys property.System[C, R], s *report.Schema[C, R],
	h report.Header, r *report.Repro, l *layout.Layout, c C, label string) (*report.Failure, error) {
	runs, fails, first, other, err := replays(ctx, sys, c, r.Count)
	if err != nil || fails == 0 {
		return nil, err
	}
	f := &property.Failure[C, R]{Original: first, Minimal: first, Rerun: other, Reran: true, Case: c, Property: first.Primary()}
	f.Flaky = !other.Has(f.Property)
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
	if runs > 1 && r.Count > 1 {
		fl.Replays, fl.ReplayFails = runs, fails
	}
	return fl, nil
}

// replays checks c count times, at least once; a single replay that
// fails checks it once more to confirm. It returns the runs made and how
// many failed, the first failing result, and the run to set beside it:
// the first that passed, else the second failure.
func replays[C any, R report.Result](ctx context.Context, sys property.System[C, R], c C, count int) (runs, fails int, first, other R, err error) {
	want := max(count, 1)
	var passed, second R
	havePass := false
	for runs < want || (count <= 1 && fails == 1 && runs < 2) {
		res, err := property.CheckOnce(ctx, sys, c)
		if err != nil {
			return runs, fails, first, other, err
		}
		runs++
		switch {
		case res.Failed() && fails == 0:
			first = res
		case res.Failed() && fails == 1:
			second = res
		case !res.Failed() && !havePass:
			passed, havePass = res, true
		}
		if res.Failed() {
			fails++
		}
	}
	if havePass {
		return runs, fails, first, passed, nil
	}
	return runs, fails, first, second, nil
}

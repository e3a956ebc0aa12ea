package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

func init() {
	register("repro", "replay a saved failing case and classify it again", runRepro)
}

const reproExamples = `  kvharness repro kvharness-results/bf16scatter-bf16-sink-padding-2139fc0f.json
  kvharness repro FILE --plugin fusedstore            # does the fix pass the case?
  kvharness repro FILE --plugin fusedstore --variant ignore-count
`

func runRepro(ctx context.Context, e *env, args []string) int {
	fs := flags("repro", "FILE [--plugin P] [--variant V]", reproExamples, e)
	pluginArg := fs.String("plugin", "", "plugin to replay against (default: the one in the file)")
	variant := fs.String("variant", "", "variant to replay against (default: the one in the file)")
	timeout := fs.Duration("timeout", plugin.DefaultCallTimeout, "deadline of one plugin call")
	var tr trust
	tr.register(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return e.errorf("repro takes exactly one repro file, got %d arguments", fs.NArg())
	}
	r, l, err := report.LoadRepro(fs.Arg(0))
	if err != nil {
		return e.errorf("%v", err)
	}
	if *pluginArg == "" {
		*pluginArg = r.Plugin
	}
	if !fs.Changed("variant") {
		*variant = r.Variant
	}
	return replay(ctx, e, r, l, *pluginArg, *variant, *timeout, tr, fs.Arg(0))
}

func replay(ctx context.Context, e *env, r *report.Repro, l *layout.Layout, pluginArg, variant string, timeout time.Duration, tr trust, path string) int {
	s, err := openTrusted(ctx, pluginArg, variant, l.HeadDim, l.PageSize, timeout, tr)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer s.close()
	sys, closeSys, err := replaySystem(ctx, s, r, l, variant)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer closeSys()
	first, err := sys.Check(ctx, r.Case)
	if err != nil {
		return e.errorf("%v", err)
	}
	if !first.Failed() {
		fmt.Fprintf(e.stdout, "PASS %s%s · %s · %v: no invariant violated\n", s.desc.Name, variantSuffix(variant), l.Name, r.Case)
		return exitPass
	}
	again, err := sys.Check(ctx, r.Case)
	if err != nil {
		return e.errorf("%v", err)
	}
	v := verdictOf(l, r, first, again)
	f := report.Failure{Plugin: s.desc.Name, Variant: variant, Layout: l, Verdict: v, ReproPath: path, Replayed: true}
	switch sys := sys.(type) {
	case *property.Transfers:
		d, _ := sys.Details(first)
		report.WriteTransferFailure(e.stdout, report.TransferFailure{Plugin: f.Plugin, Variant: variant, Verdict: v,
			Details: d, ReproPath: path, Replayed: true})
	case *property.Reads:
		report.WriteReadFailure(e.stdout, f)
	default:
		report.WriteFailure(e.stdout, f)
	}
	return exitViolation
}

// verdictOf presents a replayed case the way a property run presents a
// failure, so repro and check print the same report.
func verdictOf(l *layout.Layout, r *report.Repro, first, again *check.Result) property.Verdict {
	f := &property.Failure{Original: first, Minimal: first, Rerun: again, Property: first.Primary()}
	f.Flaky = !again.Has(f.Property)
	seed, index := int64(0), 1
	if r.Found != nil {
		seed, index = r.Found.Seed, r.Found.CaseIndex
	}
	return property.Verdict{Layout: l, Label: label(r.Case), Seed: seed,
		Outcome: &property.Outcome{Cases: index, Failure: f}}
}

func variantSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " --variant " + v
}

// replaySystem attaches the plugin the way the case's kernel needs.
func replaySystem(ctx context.Context, s *session, r *report.Repro, l *layout.Layout, variant string) (property.System, func(), error) {
	switch c := r.Case.(type) {
	case *workload.Store:
		t, err := check.Open(ctx, s.plugin, s.dir, check.Config{Variant: variant, Layout: l, Slots: r.Slots,
			MaxCapacity: c.Capacity(), Seed: r.BackgroundSeed})
		if err != nil {
			return nil, nil, err
		}
		return &property.Stores{Target: t}, func() { t.Close(ctx) }, nil
	case *workload.Read:
		t, err := check.OpenRead(ctx, s.plugin, s.dir, check.ReadConfig{Variant: variant, Layout: l, Slots: r.Slots,
			MaxRequests: len(c.Requests), MaxTokens: max(1, c.TotalTokens()), MaxK: c.K, Seed: r.BackgroundSeed})
		if err != nil {
			return nil, nil, err
		}
		return &property.Reads{Target: t}, func() { t.Close(ctx) }, nil
	case *workload.Transfer:
		sys := property.NewTransfers(s.plugin, s.dir, check.TransferConfig{Variant: variant, Geometry: c.Geometry,
			Seed: r.BackgroundSeed}, nil)
		return sys, func() { sys.Close(ctx) }, nil
	}
	return nil, nil, fmt.Errorf("this kvharness cannot replay %s cases", r.Kernel)
}

// label is the report's second column for a case: the padding of a store.
func label(c workload.Case) string {
	if s, ok := c.(*workload.Store); ok {
		return s.Padding.String()
	}
	return c.Kernel()
}

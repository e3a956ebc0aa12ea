package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
)

func init() { kernelChecks["read"] = checkRead }

// checkRead runs the read properties per layout: the pool holds the
// case's keys, the plugin returns each request's top k, and nothing but
// its out windows may change.
func checkRead(ctx context.Context, e *env, f *checkFlags, s *session) int {
	if f.graph {
		return e.errorf("--graph applies to stores; read kernels run eagerly")
	}
	layouts, err := s.layouts(f.layout, f.layoutFile, f.headDim, f.pageSize)
	if err != nil {
		return e.errorf("%v", err)
	}
	backend, where, release, err := check.ChooseBackend(f.backend, f.device, s.desc.Backends)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	suite := &property.ReadSuite{Plugin: s.plugin, Dir: s.dir, Variant: f.variant, Layouts: layouts, Cases: f.cases,
		Seed: f.seed, Slots: f.slots, BackgroundSeed: f.seed, Backend: backend, MaxFaults: f.maxFaults}
	vs, runErr := suite.Run(ctx)
	failures, err := saveFailures(f, s.desc.Name, vs)
	if err != nil {
		return e.errorf("%v", err)
	}
	h := report.Header{Plugin: s.desc.Name, Version: s.desc.Version, Variant: f.variant, Cases: f.cases,
		Slots: f.slots, Seed: f.seed, Backend: where}
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(report.ReadJSON(h, vs, failures, runErr))
		return verdictCode(e, vs, runErr)
	}
	report.WriteReadTable(e.stdout, h, vs)
	for i, fl := range failures {
		if i == 0 {
			fmt.Fprintln(e.stdout)
			report.WriteReadFailure(e.stdout, fl)
			continue
		}
		fmt.Fprintf(e.stdout, "  %s %s: kvharness repro %s\n", fl.Layout.Name, fl.Verdict.Outcome.Failure.Property, fl.ReproPath)
	}
	return verdictCode(e, vs, runErr)
}

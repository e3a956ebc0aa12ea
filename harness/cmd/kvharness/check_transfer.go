package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kvharness/kvharness/harness/check"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// kernelChecks run the properties of kernels other than store.
var kernelChecks = map[string]func(context.Context, *env, *checkFlags, *session) int{
	"transfer": checkTransfer,
}

// checkTransfer runs the transfer properties: one row per room profile
// over a DeepSeek-V4-like geometry (per layer a bf16 KV buffer, an fp8
// state buffer sharing its allocation, an fp8-paged index-K buffer).
func checkTransfer(ctx context.Context, e *env, f *checkFlags, s *session) int {
	backend, where, release, err := check.ChooseBackend(f.backend, f.device, s.desc.Backends)
	if err != nil {
		return e.errorf("%v", err)
	}
	defer release()
	g := workload.DefaultTransferGeometry(property.DefaultTransferLayers, max(f.slots/f.pageSize, 8))
	g.PageSize = f.pageSize
	for i := range g.Buffers {
		g.Buffers[i].HeadDim = f.headDim
	}
	if err := g.Validate(); err != nil {
		return e.errorf("transfer geometry: %v", err)
	}
	suite := &property.TransferSuite{Plugin: s.plugin, Dir: s.dir, Variant: f.variant, Geometry: g, Cases: f.cases,
		Seed: f.seed, BackgroundSeed: f.seed, Backend: backend, MaxFaults: f.maxFaults}
	vs, runErr := suite.Run(ctx)
	failures, err := saveTransferFailures(f, s.desc.Name, suite, vs)
	if err != nil {
		return e.errorf("%v", err)
	}
	h := report.TransferHeader{Plugin: s.desc.Name, Version: s.desc.Version, Variant: f.variant, Cases: f.cases,
		Seed: f.seed, Backend: where, Geometry: g}
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(report.TransferJSON(h, vs, failures, runErr))
	} else {
		writeTransferText(e, h, vs, failures)
	}
	return verdictCode(e, vs, runErr)
}

func saveTransferFailures(f *checkFlags, name string, suite *property.TransferSuite, vs []property.Verdict) ([]report.TransferFailure, error) {
	var out []report.TransferFailure
	for _, v := range vs {
		if v.Outcome.Failure == nil {
			continue
		}
		r, err := report.TransferRepro(f.plugin, f.variant, f.seed, v)
		if err != nil {
			return nil, err
		}
		path, err := r.Save(f.results)
		if err != nil {
			return nil, err
		}
		d, _ := suite.Details(v.Outcome.Failure.Minimal)
		out = append(out, report.TransferFailure{Plugin: name, Variant: f.variant, Verdict: v, Details: d, ReproPath: path})
	}
	return out, nil
}

func writeTransferText(e *env, h report.TransferHeader, vs []property.Verdict, failures []report.TransferFailure) {
	report.WriteTransferTable(e.stdout, h, vs)
	for i, f := range failures {
		if i == 0 {
			fmt.Fprintln(e.stdout)
			report.WriteTransferFailure(e.stdout, f)
			continue
		}
		if i == 1 {
			fmt.Fprintln(e.stdout, "\nother failures:")
		}
		fmt.Fprintf(e.stdout, "  %s %s: kvharness repro %s\n", f.Verdict.Label, f.Verdict.Outcome.Failure.Property, f.ReproPath)
	}
}

package transfer

import (
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/workload"
)

// TransferJSONReport is the machine-readable form of a transfer suite run.
type TransferJSONReport struct {
	Plugin   string                    `json:"plugin"`
	Version  string                    `json:"version"`
	Variant  string                    `json:"variant,omitempty"`
	Seed     int64                     `json:"seed"`
	Geometry workload.TransferGeometry `json:"geometry"`
	Verdicts []TransferJSONVerdict     `json:"verdicts"`
	Passed   bool                      `json:"passed"`
	Fault    string                    `json:"fault,omitempty"`
}

// TransferJSONVerdict is one profile's row.
type TransferJSONVerdict struct {
	Profile    string                 `json:"profile"`
	Seed       int64                  `json:"seed"`
	Cases      int                    `json:"cases"`
	Properties map[oracle.Kind]string `json:"properties"`
	Failure    *TransferJSONFailure   `json:"failure,omitempty"`
}

// TransferJSONFailure is a row's minimal counterexample, with its
// violations located and its rooms' digests.
type TransferJSONFailure struct {
	Property    oracle.Kind                `json:"property"`
	Flaky       bool                       `json:"flaky,omitempty"`
	Shrinks     int                        `json:"shrinks"`
	Case        workload.Case              `json:"case"`
	Violations  []oracle.TransferViolation `json:"violations"`
	Descriptors []oracle.Descriptor        `json:"descriptors,omitempty"`
	Digests     []oracle.RoomDigest        `json:"digests,omitempty"`
	Repro       string                     `json:"repro,omitempty"`
}

// TransferJSON builds the machine-readable report. failures supply the
// details and repro paths of failing rows.
func TransferJSON(h TransferHeader, vs []property.Verdict, failures []TransferFailure, runErr error) *TransferJSONReport {
	out := &TransferJSONReport{Plugin: h.Plugin, Version: h.Version, Variant: h.Variant, Seed: h.Seed, Geometry: h.Geometry, Passed: runErr == nil}
	if runErr != nil {
		out.Fault = runErr.Error()
	}
	byOutcome := map[*property.Outcome]TransferFailure{}
	for _, f := range failures {
		byOutcome[f.Verdict.Outcome] = f
	}
	for _, v := range vs {
		jv := TransferJSONVerdict{Profile: v.Label, Seed: v.Seed, Cases: v.Outcome.Cases, Properties: map[oracle.Kind]string{}}
		for _, p := range TransferProperties {
			jv.Properties[p] = transferCell(v.Outcome, p)
		}
		out.Passed = out.Passed && v.Outcome.Passed() // a survived plugin fault is not a pass
		if fl := v.Outcome.Failure; fl != nil {
			jv.Failure = transferJSONFailure(fl, byOutcome[v.Outcome])
		}
		out.Verdicts = append(out.Verdicts, jv)
	}
	return out
}

func transferJSONFailure(fl *property.Failure, f TransferFailure) *TransferJSONFailure {
	jf := &TransferJSONFailure{Property: fl.Property, Flaky: fl.Flaky, Shrinks: fl.Shrinks, Case: fl.Minimal.Case, Repro: f.ReproPath}
	if d := f.Details; d != nil {
		jf.Violations, jf.Descriptors, jf.Digests = d.Transfer, d.Descriptors, d.Digests
	}
	return jf
}

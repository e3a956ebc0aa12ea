package report

import (
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/workload"
)

// JSONReport is the machine-readable form of a check run.
type JSONReport struct {
	Plugin   string        `json:"plugin"`
	Version  string        `json:"version"`
	Variant  string        `json:"variant,omitempty"`
	Seed     int64         `json:"seed"`
	Slots    int           `json:"slots"`
	Verdicts []JSONVerdict `json:"verdicts"`
	Passed   bool          `json:"passed"`
	Fault    string        `json:"fault,omitempty"`
}

// JSONVerdict is one layout × padding row.
type JSONVerdict struct {
	Layout     string                 `json:"layout"`
	Padding    string                 `json:"padding"`
	Seed       int64                  `json:"seed"`
	Cases      int                    `json:"cases"`
	Properties map[oracle.Kind]string `json:"properties"`
	Failure    *JSONFailure           `json:"failure,omitempty"`
}

// JSONFailure is a row's minimal counterexample.
type JSONFailure struct {
	Property   oracle.Kind        `json:"property"`
	Flaky      bool               `json:"flaky,omitempty"`
	Shrinks    int                `json:"shrinks"`
	Case       workload.Case      `json:"case"`
	Violations []oracle.Violation `json:"violations"`
	Repro      string             `json:"repro,omitempty"`
}

// JSON builds the machine-readable report.
func JSON(h Header, vs []property.Verdict, failures []Failure, runErr error) *JSONReport {
	out := &JSONReport{Plugin: h.Plugin, Version: h.Version, Variant: h.Variant, Seed: h.Seed, Slots: h.Slots, Passed: runErr == nil}
	if runErr != nil {
		out.Fault = runErr.Error()
	}
	repro := map[*property.Outcome]string{}
	for _, f := range failures {
		repro[f.Verdict.Outcome] = f.ReproPath
	}
	for _, v := range vs {
		jv := JSONVerdict{Layout: v.Layout.Name, Padding: v.Label, Seed: v.Seed, Cases: v.Outcome.Cases,
			Properties: map[oracle.Kind]string{}}
		for _, p := range Properties {
			jv.Properties[p] = cell(v.Outcome, p)
		}
		out.Passed = out.Passed && v.Outcome.Passed() // a survived plugin fault is not a pass
		if fl := v.Outcome.Failure; fl != nil {
			jv.Failure = &JSONFailure{Property: fl.Property, Flaky: fl.Flaky, Shrinks: fl.Shrinks,
				Case: fl.Minimal.Case, Violations: fl.Minimal.Violations, Repro: repro[v.Outcome]}
		}
		out.Verdicts = append(out.Verdicts, jv)
	}
	return out
}

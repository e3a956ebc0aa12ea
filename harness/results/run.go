package results

import (
	"fmt"
	"slices"
	"time"

	"github.com/kvharness/kvharness/harness/measure"
)

// A Run is one pass's measurement of one cell: a line of runs.jsonl. A
// night of P passes holds P runs of each cell, taken minutes apart
// between the other cells' runs (and, for each pass, by a plugin process
// of its own), so that what drifts over a night — clocks, other tenants, a
// process's launch gap — varies between runs rather than shifting one
// cell. A run is the unit a comparison counts; its samples are not
// independent of each other and are never counted as runs.
type Run struct {
	Schema string `json:"schema"`
	Identity
	Pass      int                `json:"pass"` // 1-based
	Stop      measure.StopReason `json:"stop"`
	HostPaced int                `json:"host_paced,omitempty"`
	Device    string             `json:"device,omitempty"` // as the plugin reported it
	Time      time.Time          `json:"time"`
	Samples   []float64          `json:"samples_ns"`
}

// RunKey identifies a run for --resume: its cell's key and its pass.
type RunKey struct {
	Cell Key
	Pass int
}

// Key returns r's run key.
func (r Run) Key() RunKey { return RunKey{r.Identity.Key(), r.Pass} }

// Validate reports a run that cannot be part of a cell.
func (r *Run) Validate() error {
	if err := checkSchema(r.Schema, RunSchema); err != nil {
		return err
	}
	if err := r.Identity.Validate(); err != nil {
		return fmt.Errorf("run %s: %w", r.Identity.Key(), err)
	}
	if r.Pass < 1 {
		return fmt.Errorf("run %s: pass %d; passes count from 1", r.Identity.Key(), r.Pass)
	}
	if len(r.Samples) == 0 {
		return fmt.Errorf("run %s pass %d: no samples", r.Identity.Key(), r.Pass)
	}
	return nil
}

// A RunSummary is one run of a cell, summarized: what a result line of
// bench.txt is made of.
type RunSummary struct {
	Pass      int              `json:"pass"`
	BatchSize int              `json:"batch_size"`
	Summary   measure.Summary  `json:"summary"`
	Quantiles []QuantileValue  `json:"quantiles,omitempty"`
	Stop      measure.StopKind `json:"stop"`
	HostPaced int              `json:"host_paced,omitempty"`
	// CopyNs is, for a store, the median of its copy's run of the same
	// pass: the roofline measured beside this run.
	CopyNs float64 `json:"copy_ns,omitempty"`
}

// A QuantileValue is a chosen quantile of a cell's or run's samples, as
// triton's do_bench(quantiles=[...]) reports them.
type QuantileValue struct {
	Q  float64 `json:"q"`
	Ns float64 `json:"ns"`
}

// NewCell assembles the cell that runs (all of one identity) measured:
// the runs in pass order, each summarized; the cell's Summary and chosen
// quantiles over all their samples pooled, so a p99.9 comes from every
// launch the night timed; its stop reason combined under crit, the cell's
// whole criterion. The caller adds the cell's bytes, rates, copy and
// environment.
func NewCell(runs []Run, quantiles []float64, crit measure.Criterion) (Cell, error) {
	if len(runs) == 0 {
		return Cell{}, fmt.Errorf("a cell needs at least one run")
	}
	runs = slices.Clone(runs)
	slices.SortFunc(runs, func(a, b Run) int { return a.Pass - b.Pass })
	c := Cell{Schema: CellSchema, Identity: runs[0].Identity}
	var reasons []measure.StopReason
	for _, r := range runs {
		if r.Identity.Key() != c.Key() {
			return Cell{}, fmt.Errorf("run of %s among the runs of %s", r.Identity.Key(), c.Key())
		}
		rs, err := summarizeRun(r, quantiles)
		if err != nil {
			return Cell{}, err
		}
		c.Runs = append(c.Runs, rs)
		c.Samples = append(c.Samples, r.Samples...)
		c.HostPaced += r.HostPaced
		reasons = append(reasons, r.Stop)
	}
	var err error
	if c.Summary, err = measure.Summarize(c.Samples); err != nil {
		return Cell{}, fmt.Errorf("cell %s: %w", c.Key(), err)
	}
	if c.Quantiles, err = quantilesOf(c.Samples, quantiles); err != nil {
		return Cell{}, fmt.Errorf("cell %s: %w", c.Key(), err)
	}
	c.Stop = measure.Combine(reasons, crit, c.Summary.Noise)
	return c, nil
}

func summarizeRun(r Run, quantiles []float64) (RunSummary, error) {
	sum, err := measure.Summarize(r.Samples)
	if err != nil {
		return RunSummary{}, fmt.Errorf("run %s pass %d: %w", r.Identity.Key(), r.Pass, err)
	}
	qs, err := quantilesOf(r.Samples, quantiles)
	if err != nil {
		return RunSummary{}, err
	}
	return RunSummary{Pass: r.Pass, BatchSize: max(r.BatchSize, 1), Summary: sum, Quantiles: qs, Stop: r.Stop.Kind, HostPaced: r.HostPaced}, nil
}

func quantilesOf(samples, qs []float64) ([]QuantileValue, error) {
	var out []QuantileValue
	for _, q := range qs {
		v, err := measure.Quantile(samples, q)
		if err != nil {
			return nil, err
		}
		out = append(out, QuantileValue{q, v})
	}
	return out, nil
}

package results

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/kvharness/kvharness/harness/measure"
)

// A Cell is the result of benchmarking one Identity. Its JSON form is one
// line of cells.jsonl (schema CellSchema), with the Identity's fields at
// the top level.
//
// A cell is measured in runs (Runs, one per pass over the matrix). Its
// Summary, Quantiles and Samples pool every run's samples: a quantile is
// the quantile of all the launches the night timed, never an average of
// the runs' quantiles. The runs stay apart in Runs, as the replicates a
// comparison counts.
type Cell struct {
	Schema string `json:"schema,omitempty"` // CellSchema; empty in version 1 logs
	Identity
	Summary   measure.Summary `json:"summary"`
	Quantiles []QuantileValue `json:"quantiles,omitempty"` // the chosen quantiles, of all samples
	Runs      []RunSummary    `json:"runs,omitempty"`      // in pass order; empty in version 1

	// BytesPerLaunch is what one launch reads plus what it writes,
	// counted by the runner from the workload; GBps is derived from it.
	BytesPerLaunch int64   `json:"bytes_per_launch"`
	TokensPerSec   float64 `json:"tokens_per_s"`
	GBps           float64 `json:"gb_per_s"`
	PeakGBps       float64 `json:"peak_gb_per_s,omitempty"` // the device's peak bandwidth
	PctOfPeak      float64 `json:"pct_of_peak,omitempty"`

	// CopyNs is the median time of a plain device copy of this cell's
	// input rows (the same tokens, cache state and timing), measured in
	// the same run: the roofline this kernel is held against. CopyGBps is
	// that copy's own rate over its own bytes; the copy and the store move
	// different byte counts (a store also reads slots and writes scales),
	// so only times are compared. CopyRatio is kernel time over copy time
	// (1 = as fast as copying the rows).
	CopyNs    float64 `json:"copy_ns,omitempty"`
	CopyGBps  float64 `json:"copy_gb_per_s,omitempty"`
	CopyRatio float64 `json:"copy_ratio,omitempty"`

	Stop measure.StopReason `json:"stop"`
	// HostPaced counts batched samples the plugin kept although their
	// hold ended before the batch was queued: they may time the host's
	// launch rate rather than the GPU's (BenchResponse.host_paced).
	HostPaced int       `json:"host_paced,omitempty"`
	Env       Env       `json:"env"`
	Samples   []float64 `json:"samples_ns,omitempty"` // per-launch ns, in the order taken
}

// Env is where and when a cell ran. SMClockMHz and MemClockMHz should be
// the locked (application) clocks, not an instantaneous reading, because
// they become benchmark config lines and a changing value splits
// benchstat's tables.
type Env struct {
	Device      string    `json:"device"`
	CPU         string    `json:"cpu,omitempty"` // the host CPU's model name
	Driver      string    `json:"driver,omitempty"`
	SMClockMHz  int       `json:"sm_clock_mhz,omitempty"`
	MemClockMHz int       `json:"mem_clock_mhz,omitempty"`
	Commit      string    `json:"commit,omitempty"`
	Host        string    `json:"host,omitempty"`
	GoVersion   string    `json:"go_version,omitempty"`
	GOOS        string    `json:"goos,omitempty"`
	GOARCH      string    `json:"goarch,omitempty"`
	Time        time.Time `json:"time"`
}

// LocalEnv fills the host half of an Env: host name, Go version, GOOS,
// GOARCH and the time now. The caller adds the device, driver, clocks
// and commit.
func LocalEnv(now time.Time) Env {
	host, _ := os.Hostname() // an unknown host is left empty
	return Env{Host: host, GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Time: now}
}

// Derive fills TokensPerSec, GBps, PctOfPeak and CopyRatio from the
// median time Summary.P50, BytesPerLaunch, PeakGBps and CopyNs. Rates
// whose inputs are zero are left zero.
func (c *Cell) Derive() error {
	var err error
	if c.TokensPerSec, err = measure.TokensPerSecond(c.Tokens, c.Summary.P50); err != nil {
		return fmt.Errorf("cell %s: tokens/s: %w", c.Key(), err)
	}
	if c.BytesPerLaunch > 0 {
		c.GBps, _ = measure.GBPerSecond(c.BytesPerLaunch, c.Summary.P50) // P50 > 0 checked above
	}
	if c.PeakGBps > 0 {
		c.PctOfPeak, _ = measure.PercentOf(c.GBps, c.PeakGBps)
	}
	if c.CopyNs > 0 {
		c.CopyRatio, _ = measure.CopyRatio(c.Summary.P50, c.CopyNs) // both positive
	}
	return nil
}

// Validate reports the first problem that would make c unusable: a bad
// identity, no samples, or raw samples that disagree with the summary.
func (c *Cell) Validate() error {
	if err := checkSchema(c.Schema, "", cellSchemaV1, CellSchema); err != nil {
		return fmt.Errorf("cell %s: %w", c.Key(), err)
	}
	if err := c.Identity.Validate(); err != nil {
		return fmt.Errorf("cell %s: %w", c.Key(), err)
	}
	if c.Summary.N <= 0 {
		return fmt.Errorf("cell %s: summary has no samples (summarize the samples with measure.Summarize before recording the cell)", c.Key())
	}
	if len(c.Samples) > 0 && len(c.Samples) != c.Summary.N {
		return fmt.Errorf("cell %s: %d raw samples but summary.n = %d (summarize the samples that are stored)", c.Key(), len(c.Samples), c.Summary.N)
	}
	return c.validateRuns()
}

// validateRuns checks that the runs add up to the summary, one per pass.
func (c *Cell) validateRuns() error {
	if len(c.Runs) == 0 {
		return nil
	}
	n, passes := 0, map[int]bool{}
	for _, r := range c.Runs {
		if r.Summary.N <= 0 || passes[r.Pass] || r.Pass < 1 {
			return fmt.Errorf("cell %s: run of pass %d with %d samples (passes count from 1, once each, and hold samples)", c.Key(), r.Pass, r.Summary.N)
		}
		passes[r.Pass] = true
		n += r.Summary.N
	}
	if n != c.Summary.N {
		return fmt.Errorf("cell %s: its runs hold %d samples but summary.n = %d", c.Key(), n, c.Summary.N)
	}
	return nil
}

// RunSummaries returns c's runs; a version 1 cell, sampled at once, is
// one run of its whole summary.
func (c *Cell) RunSummaries() []RunSummary {
	if len(c.Runs) > 0 {
		return c.Runs
	}
	return []RunSummary{{Pass: 1, BatchSize: max(c.BatchSize, 1), Summary: c.Summary, Quantiles: c.Quantiles, Stop: c.Stop.Kind}}
}

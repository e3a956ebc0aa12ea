package benchrun

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/inputfile"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/results"
)

// Matrix is what a bench run covers. A JSON matrix file holds the same
// fields; omitted ones take the defaults.
type Matrix struct {
	// Kernel is the kind measured: its cells are the kind's own beside
	// the references it measures (a copy, an empty launch). Empty in a
	// file that names none: the command fills in its default kind.
	Kernel   protocol.Kernel  `json:"kernel,omitempty"`
	Plugins  []string         `json:"plugins"`
	Variant  string           `json:"variant,omitempty"`
	Layouts  []string         `json:"layouts"` // names, or ["all"]: every built-in layout a plugin declares
	Tokens   []int            `json:"tokens"`
	Modes    []results.Mode   `json:"modes"`
	Caches   []results.Cache  `json:"caches"`
	Timings  []results.Timing `json:"timings"`
	Slots    int              `json:"slots"`
	HeadDim  int              `json:"head_dim"`
	PageSize int              `json:"page_size"`
	Seed     int64            `json:"seed"`
	// SlotRun draws the slots in runs of this many consecutive slots,
	// each run starting at a multiple of it: the whole pages a paged
	// allocator hands out (SGLang with page_size 64, vLLM's blocks). 0 or
	// 1 draws every slot alone, as a free list of single slots does after
	// a while.
	SlotRun int `json:"slot_run,omitempty"`
	// Rotate is how many data sets (a pool, rows and slots each, as a
	// model's layers have; for the copy, buffer pairs) a cell's launches
	// take in turn; 0 or 1 repeats one. Repeating one lets a kernel whose
	// cache policies keep part of its data in L2 reuse it between
	// launches, which serving, where each layer's store has data and a
	// pool of its own, does not allow.
	Rotate int `json:"rotate,omitempty"`
	// Passes is how many runs each cell gets: the matrix is measured
	// Passes times over, each pass a short run of every cell (in an order
	// of its own) by plugin processes of its own, so what drifts over a
	// night lands between runs, where a comparison counts it, instead of
	// shifting one cell. 0 means DefaultPasses.
	Passes int `json:"passes,omitempty"`
	// Quantiles are the quantiles the table reports and bench.txt writes
	// per run (where a run resolves them), as do_bench's quantiles=; the
	// median is always among them. Empty means DefaultQuantiles.
	Quantiles []float64 `json:"quantiles,omitempty"`
	// Stopping rules of a whole cell, over all its passes (each pass takes
	// its share: measure.Criterion.PerPass). Per-launch cells want many
	// samples for their tails and tolerate noise; batched cells want a
	// stable mean; cold cells pay a cache flush per sample (64 MiB on a
	// CPU: milliseconds), so they get a longer time limit.
	PerLaunch measure.Criterion `json:"per_launch"`
	Batched   measure.Criterion `json:"batched"`
	Cold      measure.Criterion `json:"cold"`
	// KeepSamples stores every sample in the log (for CDF plots).
	KeepSamples bool `json:"keep_samples"`
}

// DefaultPasses is how many runs a cell gets by default: six a side is
// where a U-test over runs can reach p = 0.002 (two of the 924 ways to
// split twelve runs), so a change all runs agree on is significant with
// room to spare.
const DefaultPasses = 6

// DefaultQuantiles are the median and the p99.
var DefaultQuantiles = []float64{0.5, 0.99}

// maxPasses bounds passes: past it a night is long for no gain.
const maxPasses = 100

// passes is how many runs each cell gets.
func (m Matrix) passes() int {
	if m.Passes <= 0 {
		return DefaultPasses
	}
	return m.Passes
}

// RunsPerCell is how many runs each cell of a whole night has.
func (m Matrix) RunsPerCell() int { return m.passes() }

// quantiles is the chosen quantiles, the median first.
func (m Matrix) quantiles() []float64 {
	qs := m.Quantiles
	if len(qs) == 0 {
		qs = DefaultQuantiles
	}
	out := []float64{0.5}
	for _, q := range qs {
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// Criterion is the stopping rule of a whole cell of id.
func (m Matrix) Criterion(id results.Identity) measure.Criterion {
	switch {
	case id.Timing == results.Batched:
		return m.Batched.WithDefaults()
	case id.Cache == results.Cold:
		return m.Cold.WithDefaults()
	}
	return m.PerLaunch.WithDefaults()
}

// perLaunchNoise lets per-launch cells stop on samples and time alone:
// single launches are noisy by nature, and their tails are the point. It
// is finite so that the criterion survives a JSON log.
const perLaunchNoise = 100.0

// DefaultTokens are the batch sizes: one decode token to a large
// prefill chunk.
var DefaultTokens = []int{1, 32, 512, 4096, 32768, 262144}

// Default returns the full default matrix for the given plugins.
func Default(plugins ...string) Matrix {
	return Matrix{
		Plugins: plugins, Layouts: []string{"all"}, Tokens: DefaultTokens,
		Modes:   []results.Mode{results.Eager, results.Graph},
		Caches:  []results.Cache{results.Hot, results.Cold},
		Timings: []results.Timing{results.PerLaunch, results.Batched},
		Slots:   1 << 20, HeadDim: layout.DefaultHeadDim, PageSize: layout.DefaultPageSize, Seed: 1,
		PerLaunch:   measure.Criterion{MinSamples: 600, MaxNoise: perLaunchNoise, TimeLimit: 3 * time.Second, MaxSamples: 6000},
		Batched:     measure.Criterion{MinSamples: 30, MaxNoise: 0.01, TimeLimit: 3 * time.Second, MaxSamples: 600},
		Cold:        measure.Criterion{MinSamples: 120, MaxNoise: perLaunchNoise, TimeLimit: 12 * time.Second, MaxSamples: 3000},
		KeepSamples: true,
	}
}

// MaxMatrixBytes bounds a matrix file: the largest real one is a few
// hundred bytes, and /dev/zero given by mistake must be an error, not a
// read that never ends.
const MaxMatrixBytes = 1 << 20

// LoadMatrix reads a matrix file over the defaults, bounded and strictly:
// unknown keys and anything after the matrix object are errors, since a
// typo must not silently shrink a nightly run.
func LoadMatrix(path string) (Matrix, error) {
	data, err := inputfile.Read(path, "matrix file", MaxMatrixBytes)
	if err != nil {
		return Matrix{}, fmt.Errorf("--matrix: %w", err)
	}
	m, err := ParseMatrix(data)
	if err != nil {
		return Matrix{}, fmt.Errorf("matrix %s: %w", path, err)
	}
	return m, nil
}

// ParseMatrix decodes a matrix over the defaults and validates it.
func ParseMatrix(data []byte) (Matrix, error) {
	m := Default()
	if err := inputfile.DecodeJSON(data, &m); err != nil {
		return Matrix{}, fmt.Errorf("%w (a matrix file is one JSON object; bench/matrix-cpu.json is an example)", err)
	}
	return m, m.Validate()
}

// measurable reports whether a cache state and timing make a cell. Cold
// caches are timed per launch only: a batch is flushed once, so all but
// its first launch would run hot under a cold label.
func measurable(c results.Cache, t results.Timing) bool {
	return c != results.Cold || t != results.Batched
}

// cacheTimings counts the measurable cache × timing pairs of m.
func (m Matrix) cacheTimings() int {
	n := 0
	for _, c := range m.Caches {
		for _, t := range m.Timings {
			if measurable(c, t) {
				n++
			}
		}
	}
	return n
}

// Validate rejects matrices that cannot run.
func (m Matrix) Validate() error {
	switch {
	case len(m.Plugins) == 0:
		return fmt.Errorf("no plugins: give plugins (or --plugin)")
	case len(m.Layouts) == 0 || len(m.Tokens) == 0 || len(m.Modes) == 0 || len(m.Caches) == 0 || len(m.Timings) == 0:
		return fmt.Errorf("layouts, tokens, modes, caches and timings must each name at least one value")
	case layout.CheckHeadDim(m.HeadDim) != nil:
		return fmt.Errorf("head_dim %d: %w", m.HeadDim, layout.CheckHeadDim(m.HeadDim))
	case m.PageSize < 1 || m.PageSize > 1<<16:
		return fmt.Errorf("page_size %d: want 1..65536 tokens", m.PageSize)
	case m.Slots < 1:
		return fmt.Errorf("slots %d: want at least 1", m.Slots)
	case m.SlotRun < 0 || m.SlotRun > m.Slots:
		return fmt.Errorf("slot_run %d: want 1..slots (%d) consecutive slots per run (0 means 1)", m.SlotRun, m.Slots)
	case m.Rotate < 0 || m.Rotate > maxRotate:
		return fmt.Errorf("rotate %d: want 1..%d data sets (0 means 1)", m.Rotate, maxRotate)
	}
	if err := m.validateEnums(); err != nil {
		return err
	}
	if m.cacheTimings() == 0 {
		return fmt.Errorf("caches %v with timings %v make no cell: cold caches are timed per launch only (a batch runs hot after its first launch); want per-launch among the timings", m.Caches, m.Timings)
	}
	for _, n := range m.Layouts {
		if n != "all" && n != "engines" && layout.Describe(n) == "" {
			return fmt.Errorf("layout %q: unknown; want \"all\", \"engines\" or one of %v", n, layout.Names())
		}
	}
	for _, t := range m.Tokens {
		if t < 1 || t > m.Slots {
			return fmt.Errorf("tokens %d: want 1..slots (%d): each token needs its own slot", t, m.Slots)
		}
		if whole := m.Slots / m.slotRun() * m.slotRun(); t > whole {
			return fmt.Errorf("tokens %d: the pool's %d slots hold %d in whole runs of %d; raise slots or lower slot_run", t, m.Slots, whole, m.slotRun())
		}
	}
	for _, c := range []measure.Criterion{m.PerLaunch, m.Batched, m.Cold} {
		if c.MinSamples < 0 || c.MaxNoise < 0 || c.TimeLimit < 0 || c.MaxSamples < 0 || c.MinTime < 0 {
			return fmt.Errorf("stopping criteria must not be negative: want 0 (the default) or more")
		}
	}
	return m.validateRuns()
}

// validateEnums refuses a mode, cache or timing the runner does not
// know: a cell of "warp" mode would otherwise fail at its first run, or
// a "lukewarm" cache be timed as a hot one.
func (m Matrix) validateEnums() error {
	if err := known("modes", m.Modes, results.Eager, results.Graph); err != nil {
		return err
	}
	if err := known("caches", m.Caches, results.Hot, results.Cold); err != nil {
		return err
	}
	return known("timings", m.Timings, results.PerLaunch, results.Batched)
}

// known refuses a value of field that is not one of allowed, or is given
// twice (a repeated value would measure its cells twice under one name).
func known[T ~string](field string, values []T, allowed ...T) error {
	var names []string
	for _, a := range allowed {
		names = append(names, fmt.Sprintf("%q", a))
	}
	for i, v := range values {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("%s: %q is not one; want %s", field, v, strings.Join(names, " or "))
		}
		if slices.Contains(values[:i], v) {
			return fmt.Errorf("%s: %q is given twice; remove one", field, v)
		}
	}
	return nil
}

// validateRuns checks passes and quantiles.
func (m Matrix) validateRuns() error {
	if m.Passes < 0 || m.Passes > maxPasses {
		return fmt.Errorf("passes %d: want 1..%d runs per cell (0 means %d)", m.Passes, maxPasses, DefaultPasses)
	}
	for _, q := range m.Quantiles {
		if !(q > 0 && q < 1) {
			return fmt.Errorf("quantile %v: want 0 < q < 1 (0.5 is the median, 0.99 the p99)", q)
		}
	}
	return nil
}

// maxRotate is the most data sets a rotation takes: the plugin SDKs
// accept a store and 63 more.
const maxRotate = 64

// slotRun is how many consecutive slots a run of the drawn slots holds.
func (m Matrix) slotRun() int { return max(m.SlotRun, 1) }

// rotations is how many data sets the cells take in turn.
func (m Matrix) rotations() int { return max(m.Rotate, 1) }

// nameField is an identity field for a count that names a cell only above
// 1 (rotate, slot_run): 0 otherwise, so that 1 names the same benchmarks
// as a matrix without the key.
func nameField(n int) int {
	if n <= 1 {
		return 0
	}
	return n
}

func (m Matrix) maxTokens() int { return m.Setup(nil).MaxTokens() }

// Setup is what the matrix asks of every group's cells, on backend b.
func (m Matrix) Setup(b arena.Backend) kind.BenchSetup {
	return kind.BenchSetup{Variant: m.Variant, HeadDim: m.HeadDim, PageSize: m.PageSize, Slots: m.Slots, Seed: m.Seed,
		Layouts: m.Layouts, Tokens: m.Tokens, Rotate: m.Rotate, SlotRun: m.SlotRun, Backend: b}
}

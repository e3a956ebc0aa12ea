package gpustore

import (
	_ "embed"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

//go:embed store.cuh
var bodies string

// Kind is which kernel body a layout needs.
type Kind int

const (
	BF16 Kind = iota // rows copied as they are
	FP8              // rows quantized to e4m3 with a float32 scale per token
)

// Quantizer selects the fp8 arithmetic; the zero value is the exact one.
type Quantizer struct {
	NoFloor        bool // scale = amax / 448, without the 1e-4 floor
	TowardZeroE4M3 bool // truncate instead of rounding to nearest even
}

// Spec is everything that decides one compiled store kernel.
type Spec struct {
	Name     string // names the program in NVRTC errors, e.g. "fusedstore/fp8-paged"
	Source   string // the plugin's CUDA C, appended to the shared bodies
	Entry    string // the extern "C" kernel to launch
	Kind     Kind
	HeadDim  int
	PageSize int
	// Geometry is where the CPU kernel puts a token; the GPU kernel gets
	// the same numbers as macros.
	Geometry cpustore.Geometry
	Quant    Quantizer
	Defines  []string // the plugin's own -D options, e.g. its variant's rule
	// Mutation, when set, is a bug the shared bodies put in on purpose:
	// a plugin's mutant of a GPU bug class.
	Mutation Mutation
	// Offsets32 computes pool offsets in 32 bits whatever the tuning
	// (KV_IDX32): past 2 GiB they wrap (a mutant).
	Offsets32 bool
	// Tune lays the kernel out on the GPU; nil is the kind's default
	// (DefaultBF16, DefaultFP8, or TuningEnv's), by capacity (For). It
	// never changes a stored byte.
	Tune *Tuning
}

// Mutation is a bug class the shared store bodies can carry, as a
// mutant's kernel: each is a macro of store.cuh.
type Mutation int

// The mutations.
const (
	NoMutation       Mutation = iota
	Vec16NoTail               // KV_VEC16_NO_TAIL: bf16 rows copied by 16 elements, no tail
	DenormalsAreZero          // KV_BF16_DAZ: bf16 elements through flushing float32 arithmetic
	ZeroRowSign               // KV_ZERO_ROW_FAST: fp8 zero rows stored as +0 codes
	NaNPairScale              // KV_NAN_PAIR: NaN voted over the pair of rows a warp holds
)

// mutationMacros are the mutations' macros, by Mutation.
var mutationMacros = []string{"", "KV_VEC16_NO_TAIL", "KV_BF16_DAZ", "KV_ZERO_ROW_FAST", "KV_NAN_PAIR"}

// Tuning is how a store kernel runs: block shape, rows in flight, cache
// hints and the form of the fp8 arithmetic. Every tuning stores the same
// bytes; benchmarks compile several to pick the defaults.
type Tuning struct {
	BlockThreads  int // threads per block (bf16: rounded down to whole rows)
	RowsPerThread int // rows each thread group moves, all loaded before any is stored
	BF16Lanes     int // bf16 threads per row, 16 bytes each per pass; 0: one per 16 B of the row, at most a block
	FP8Lanes      int // fp8 lanes per row: 4, 8, 16 or 32
	FP8Elems      int // bf16 elements an fp8 lane loads at once: 4 (8 bytes) or 8 (16 bytes)
	LoadHint      int // 0 plain, 1 streaming, 2 non-coherent, 3 non-coherent + no L1 + 256 B L2 prefetch, 4 non-coherent + no L1 + L2 evict-first
	StoreHint     int // 0 plain, 1 streaming, 2 no L1 allocation, 3 no L1 + L2 evict-first, 4 no L1 + L2 evict-last
	FP8Div        int // 0: x / s; 1 or 2: RN(1/s) and 1 or 2 FMA corrections, the same IEEE quotient
	FP8Pair       bool
	FP8FMax       bool
	Idx32         bool // 32-bit pool offsets: only for pools under 2 GiB
}

// Tunings are a kind's tunings by batch size: Small for capacities up to
// SmallMax rows (latency: more lanes, less work each), Large above
// (throughput), and Streaming from StreamingMin rows when that is set: a
// batch whose rows and destinations outgrow the L2 cache and stream
// through DRAM, where another block shape may be faster. The choice
// depends on the capacity only, so a graph captured at capacity C replays
// the kernel chosen for C.
type Tunings struct {
	Small, Large Tuning
	SmallMax     int
	Streaming    Tuning
	StreamingMin int // 0: no Streaming tier
}

// pick is the tuning for a batch of capacity rows.
func (ts Tunings) pick(capacity int) Tuning {
	switch {
	case ts.StreamingMin > 0 && capacity >= ts.StreamingMin:
		return ts.Streaming
	case capacity <= ts.SmallMax:
		return ts.Small
	}
	return ts.Large
}

// tiers are the capacity ranges with a tuning of their own, as the
// largest capacity each serves (the last one serves every larger one).
func (ts Tunings) tiers() []int {
	tiers := []int{ts.SmallMax}
	if ts.StreamingMin > 0 {
		return append(tiers, ts.StreamingMin-1, ts.StreamingMin)
	}
	return append(tiers, ts.SmallMax+1)
}

// The default tunings, chosen by TestKernelVariants on an H200 and
// measured through the SDK with them (NOTES.md in this package). bf16: one
// row per 16-thread group in 128-thread blocks up to 4096 rows (latency),
// two rows per group in 1024-thread blocks up to 131,071 (more stores in
// flight), then one row per group in 256-thread blocks (at 262,144 rows,
// 36.7–37.2 µs against 37.4–37.8 in local memory: NOTES.md, runs 5 and
// 6). fp8: 16 lanes per row with the reciprocal-corrected division
// (exact: TestDivisionExhaustive) up to 4096 rows; 8 lanes per row,
// 16-byte loads, one row per group and fmaxf above.
// No tier uses an L2 eviction policy: evict-first rows and stores looked
// up to 2% faster when a bench repeated one store, because they let part
// of its data stay in L2 from one launch to the next; with every launch on
// rows and slots of its own (kvharness bench --rotate 4), as in serving,
// they are 1–3.5% slower.
var (
	DefaultBF16 = Tunings{
		Small:        Tuning{BlockThreads: 128, RowsPerThread: 1},
		Large:        Tuning{BlockThreads: 1024, RowsPerThread: 2},
		SmallMax:     4096,
		Streaming:    Tuning{BlockThreads: 256, RowsPerThread: 1},
		StreamingMin: 131072,
	}
	DefaultFP8 = Tunings{
		Small:    Tuning{BlockThreads: 128, RowsPerThread: 1, FP8Lanes: 16, FP8Elems: 8, FP8Div: 1, FP8Pair: true},
		Large:    Tuning{BlockThreads: 128, RowsPerThread: 1, FP8Lanes: 8, FP8Elems: 8, FP8Pair: true, FP8FMax: true},
		SmallMax: 4096,
	}
)

// TuningEnv replaces the default tunings of the process, for benches:
// "bf16=SMALL/LARGE/SMALLMAX[/STREAMING/STREAMINGMIN];fp8=...", each
// tuning as Tuning.String writes it. A kind it leaves out keeps its
// default; a kind given without the Streaming fields has no Streaming
// tier.
const TuningEnv = "KVHARNESS_GPUSTORE_TUNING"

var envTunings = sync.OnceValues(func() (map[Kind]Tunings, error) {
	return ParseTunings(os.Getenv(TuningEnv))
})

// tuningsOf is the kind's tunings: the environment's, else the default.
func tuningsOf(k Kind) (Tunings, error) {
	env, err := envTunings()
	if t, ok := env[k]; ok && err == nil {
		return t, nil
	}
	if k == FP8 {
		return DefaultFP8, err
	}
	return DefaultBF16, err
}

// For is the spec with the tuning for a batch of capacity rows fixed: its
// own Tune if set, else the kind's Small, Large or Streaming.
func (s Spec) For(capacity int) Spec {
	if s.Tune != nil {
		return s
	}
	ts, _ := tuningsOf(s.Kind)
	t := ts.pick(capacity)
	s.Tune = &t
	return s
}

// String is the tuning as TuningEnv spells it.
func (t Tuning) String() string {
	return fmt.Sprintf("blk:%d,rpt:%d,tpr:%d,lanes:%d,elems:%d,ld:%d,st:%d,div:%d,pair:%d,fmax:%d,idx32:%d",
		t.BlockThreads, t.RowsPerThread, t.BF16Lanes, t.FP8Lanes, t.FP8Elems, t.LoadHint, t.StoreHint, t.FP8Div,
		b2i(t.FP8Pair), b2i(t.FP8FMax), b2i(t.Idx32))
}

// ParseTuning reads Tuning.String's form; fields left out are zero.
func ParseTuning(str string) (Tuning, error) {
	var t Tuning
	ints := map[string]*int{"blk": &t.BlockThreads, "rpt": &t.RowsPerThread, "tpr": &t.BF16Lanes, "lanes": &t.FP8Lanes,
		"elems": &t.FP8Elems, "ld": &t.LoadHint, "st": &t.StoreHint, "div": &t.FP8Div}
	bools := map[string]*bool{"pair": &t.FP8Pair, "fmax": &t.FP8FMax, "idx32": &t.Idx32}
	for _, kv := range strings.Split(str, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return Tuning{}, fmt.Errorf("tuning %q: %q is not key:number", str, kv)
		}
		switch {
		case ints[k] != nil:
			*ints[k] = n
		case bools[k] != nil:
			*bools[k] = n != 0
		default:
			return Tuning{}, fmt.Errorf("tuning %q: no field %q", str, k)
		}
	}
	return t, nil
}

// String is the tunings as TuningEnv spells them.
func (ts Tunings) String() string {
	s := fmt.Sprintf("%v/%v/%d", ts.Small, ts.Large, ts.SmallMax)
	if ts.StreamingMin > 0 {
		s += fmt.Sprintf("/%v/%d", ts.Streaming, ts.StreamingMin)
	}
	return s
}

// ParseTunings reads TuningEnv's form.
func ParseTunings(str string) (map[Kind]Tunings, error) {
	out := map[Kind]Tunings{}
	if strings.TrimSpace(str) == "" {
		return out, nil
	}
	for _, part := range strings.Split(str, ";") {
		name, spec, _ := strings.Cut(strings.TrimSpace(part), "=")
		kinds := map[string]Kind{"bf16": BF16, "fp8": FP8}
		k, ok := kinds[name]
		f := strings.Split(spec, "/")
		if !ok || (len(f) != 3 && len(f) != 5) {
			return nil, fmt.Errorf("%s: %q is not bf16= or fp8=SMALL/LARGE/SMALLMAX[/STREAMING/STREAMINGMIN]", TuningEnv, part)
		}
		var ts Tunings
		var err error
		if ts.Small, err = ParseTuning(f[0]); err != nil {
			return nil, err
		}
		if ts.Large, err = ParseTuning(f[1]); err != nil {
			return nil, err
		}
		if ts.SmallMax, err = strconv.Atoi(f[2]); err != nil || ts.SmallMax < 0 {
			return nil, fmt.Errorf("%s: small max %q: want a row count, 0 or more", TuningEnv, f[2])
		}
		if len(f) == 5 {
			if ts.Streaming, err = ParseTuning(f[3]); err != nil {
				return nil, err
			}
			if ts.StreamingMin, err = strconv.Atoi(f[4]); err != nil || ts.StreamingMin <= max(ts.SmallMax, 0) {
				return nil, fmt.Errorf("%s: streaming min %q: want a row count above the small max %d", TuningEnv, f[4], ts.SmallMax)
			}
		}
		out[k] = ts
	}
	return out, nil
}

// tuning is the spec's tuning with its defaults filled in: its Tune, else
// the kind's Large one (For picks by capacity).
func (s Spec) tuning() Tuning {
	t := s.Tune
	if t == nil {
		ts, _ := tuningsOf(s.Kind)
		t = &ts.Large
	}
	tu := *t
	if s.Kind == BF16 {
		chunks := max(s.HeadDim*2/16, 1)
		if tu.BF16Lanes <= 0 || tu.BF16Lanes > chunks {
			tu.BF16Lanes = chunks
		}
		if tu.BF16Lanes = min(tu.BF16Lanes, tu.BlockThreads); tu.BF16Lanes > 0 {
			tu.BlockThreads = tu.BlockThreads / tu.BF16Lanes * tu.BF16Lanes
		}
	}
	return tu
}

// checkTuning rejects a tuning the kernels cannot run.
func (s Spec) checkTuning(t Tuning) error {
	switch {
	case t.BlockThreads < 1 || t.BlockThreads > 1024:
		return fmt.Errorf("tuning %+v: %d threads per block; want 1 to 1024", t, t.BlockThreads)
	case t.RowsPerThread < 1 || t.RowsPerThread > 16:
		return fmt.Errorf("tuning %+v: %d rows per thread; want 1 to 16", t, t.RowsPerThread)
	case t.LoadHint < 0 || t.LoadHint > 4 || t.StoreHint < 0 || t.StoreHint > 4:
		return fmt.Errorf("tuning %+v: no such cache hint", t)
	case s.Kind == BF16 && t.BF16Lanes < 1:
		return fmt.Errorf("tuning %+v: a bf16 row needs a thread", t)
	case s.Kind == FP8 && (t.BlockThreads%32 != 0 || !slices.Contains([]int{4, 8, 16, 32}, t.FP8Lanes) ||
		(t.FP8Elems != 4 && t.FP8Elems != 8) || t.FP8Div < 0 || t.FP8Div > 2):
		return fmt.Errorf("tuning %+v: fp8 needs whole warps, 4 to 32 lanes per row, 4 or 8 elements per load and division 0 to 2", t)
	}
	return nil
}

// check rejects what the kernels cannot do: vectors need head dims that
// are multiples of 8 (a bf16 row of whole 16-byte vectors, an fp8 lane's
// 8 elements; every head dim a layout takes) and addresses aligned for
// their width.
func (s Spec) check() error {
	if s.HeadDim <= 0 || s.HeadDim%8 != 0 {
		return fmt.Errorf("head dim %d: the CUDA store kernels need a positive multiple of 8; use the shm backend", s.HeadDim)
	}
	if s.PageSize <= 0 {
		return fmt.Errorf("page size %d: want at least 1", s.PageSize)
	}
	tokens, pageBytes, valueBytes, err := cpustore.Addressing(s.Geometry)
	if err != nil {
		return err
	}
	align := 4 // fp8: one 4-byte word per lane, a 4-byte scale
	if s.Kind == BF16 {
		align = 16
	}
	if tokens < 1 || pageBytes%align != 0 || valueBytes%align != 0 {
		return fmt.Errorf("geometry %+v: %d tokens per page, %d-byte pages and %d-byte values must be %d-byte multiples for the CUDA kernels",
			s.Geometry, tokens, pageBytes, valueBytes, align)
	}
	if _, err := tuningsOf(s.Kind); err != nil {
		return err
	}
	return s.checkTuning(s.tuning())
}

// Options are the NVRTC options of the spec: the plugin's defines, then
// the geometry and launch shape as macros.
func (s Spec) Options() ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	tokens, pageBytes, valueBytes, _ := cpustore.Addressing(s.Geometry)
	opts := append([]string(nil), s.Defines...)
	def := func(name string, v int) { opts = append(opts, fmt.Sprintf("-D%s=%d", name, v)) }
	def("KV_HEAD_DIM", s.HeadDim)
	def("KV_PAGE_SIZE", s.PageSize)
	def("KV_TOKENS_PER_PAGE", tokens)
	def("KV_PAGE_BYTES", pageBytes)
	def("KV_VALUE_BYTES", valueBytes)
	t := s.tuning()
	def("KV_BLOCK_THREADS", t.BlockThreads)
	def("KV_ROWS_PER_THREAD", t.RowsPerThread)
	def("KV_LOAD_HINT", t.LoadHint)
	def("KV_STORE_HINT", t.StoreHint)
	def("KV_IDX32", b2i(t.Idx32 || s.Offsets32))
	for m, name := range mutationMacros[1:] {
		def(name, b2i(s.Mutation == Mutation(m+1)))
	}
	if s.Kind == FP8 {
		def("KV_FP8", 1)
		def("KV_FP8_LPR", t.FP8Lanes)
		def("KV_FP8_EPL", t.FP8Elems)
		def("KV_FP8_DIV", t.FP8Div)
		def("KV_FP8_PAIR", b2i(t.FP8Pair))
		def("KV_FP8_FMAX", b2i(t.FP8FMax))
		def("KV_SCALE_FLOOR", b2i(!s.Quant.NoFloor))
		def("KV_ROUND_TOWARD_ZERO", b2i(s.Quant.TowardZeroE4M3))
	} else {
		def("KV_FP8", 0)
		def("KV_BF16_TPR", t.BF16Lanes)
	}
	return opts, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Program is the full CUDA C source: the shared bodies, then the plugin's.
func (s Spec) Program() string { return bodies + "\n// ---- " + s.Name + " ----\n" + s.Source }

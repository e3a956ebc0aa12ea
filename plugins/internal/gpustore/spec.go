package gpustore

import (
	_ "embed"
	"fmt"

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
}

// rowsPerThread is how many rows each bf16 thread group or fp8 warp loads
// before it stores any: more bytes in flight per thread, for the same
// occupancy, which is what a bandwidth-bound scatter needs.
const (
	bf16RowsPerThread = 2
	fp8RowsPerWarp    = 4
	fp8Warps          = 8   // 256-thread blocks
	maxBlockThreads   = 256 // bf16 blocks hold at most this many threads
)

// addressing returns tokens per addressing page, page bytes and value bytes
// of a CPU geometry: a row layout is a paged layout of one token per page.
func addressing(g cpustore.Geometry) (tokens, pageBytes, valueBytes int, err error) {
	switch g := g.(type) {
	case cpustore.Rows:
		return 1, g.Stride, g.ValueBytes, nil
	case cpustore.Paged:
		if g.ScaleBytes != 4 {
			return 0, 0, 0, fmt.Errorf("paged geometry with %d-byte scales: the CUDA kernels write float32 scales", g.ScaleBytes)
		}
		return g.P, g.PageBytes, g.ValueBytes, nil
	}
	return 0, 0, 0, fmt.Errorf("geometry %T has no CUDA addressing; add it to gpustore", g)
}

// bf16Threads is threads per bf16 row: one 16-byte chunk each, at most a
// block's worth (longer rows loop).
func (s Spec) bf16Threads() int { return min(s.HeadDim*2/16, maxBlockThreads) }

// bf16RowsPerBlock is the thread groups of one bf16 block.
func (s Spec) bf16RowsPerBlock() int { return max(1, maxBlockThreads/s.bf16Threads()) }

// check rejects what the kernels cannot do: vectors need head dims that
// are multiples of 16 and addresses aligned for their width.
func (s Spec) check() error {
	if s.HeadDim <= 0 || s.HeadDim%16 != 0 {
		return fmt.Errorf("head dim %d: the CUDA store kernels need a positive multiple of 16; use the shm backend", s.HeadDim)
	}
	if s.PageSize <= 0 {
		return fmt.Errorf("page size %d: want at least 1", s.PageSize)
	}
	tokens, pageBytes, valueBytes, err := addressing(s.Geometry)
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
	return nil
}

// Options are the NVRTC options of the spec: the plugin's defines, then
// the geometry and launch shape as macros.
func (s Spec) Options() ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	tokens, pageBytes, valueBytes, _ := addressing(s.Geometry)
	opts := append([]string(nil), s.Defines...)
	def := func(name string, v int) { opts = append(opts, fmt.Sprintf("-D%s=%d", name, v)) }
	def("KV_HEAD_DIM", s.HeadDim)
	def("KV_PAGE_SIZE", s.PageSize)
	def("KV_TOKENS_PER_PAGE", tokens)
	def("KV_PAGE_BYTES", pageBytes)
	def("KV_VALUE_BYTES", valueBytes)
	if s.Kind == FP8 {
		def("KV_FP8", 1)
		def("KV_ROWS_PER_THREAD", fp8RowsPerWarp)
		def("KV_FP8_WARPS", fp8Warps)
		def("KV_SCALE_FLOOR", b2i(!s.Quant.NoFloor))
		def("KV_ROUND_TOWARD_ZERO", b2i(s.Quant.TowardZeroE4M3))
	} else {
		def("KV_FP8", 0)
		def("KV_ROWS_PER_THREAD", bf16RowsPerThread)
		def("KV_BF16_TPR", s.bf16Threads())
		def("KV_BF16_RPB", s.bf16RowsPerBlock())
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

package gpuread

import (
	_ "embed"
	"fmt"

	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

//go:embed read.cu
var source string

// Kind is how keys are stored.
type Kind int

const (
	BF16 Kind = iota // bf16 elements
	FP8              // e4m3 codes times a float32 scale per token
)

// Rule is a mutant of the read kernel; see read.cu.
type Rule int

const (
	Correct          Rule = iota // read each request's list, leave the pool alone
	UnmaskedTail                 // read lists rounded up to Tile tokens
	Scratch                      // leave the top scores in slot 0's values
	DenormalsAreZero             // flush subnormal query elements to zeros of their sign
	KeysPrescaled                // double each (dequantized) key element before its product, halve the sum
	SharedRange                  // clamp every score into the call's range, one NaN-propagating min and max over all requests
)

// Tile is the unmasked-tail mutant's tile, in tokens. The CPU kernels round
// their lists the same way.
const Tile = 8

// Warps per block.
const Warps = 8

// Entry is the kernel's extern "C" name.
const Entry = "kvread"

// Spec is everything that decides one compiled read kernel.
type Spec struct {
	Name    string // names the program in NVRTC errors, e.g. "fusedstore/read/fp8-paged"
	Kind    Kind
	HeadDim int
	Values  cpustore.Geometry // where a token's values are
	Scales  cpustore.Geometry // where its scale is read from (FP8); Values when nil
	Rule    Rule
}

// align is what the kernel's loads need of every address: 8-byte bf16
// loads, 4-byte e4m3 words and scales.
func (s Spec) align() int {
	if s.Kind == BF16 {
		return 8
	}
	return 4
}

func (s Spec) scales() cpustore.Geometry {
	if s.Scales == nil {
		return s.Values
	}
	return s.Scales
}

// Options are the NVRTC options of the spec.
func (s Spec) Options() ([]string, error) {
	if s.HeadDim <= 0 || s.HeadDim%8 != 0 {
		return nil, fmt.Errorf("head dim %d: the CUDA read kernel needs a positive multiple of 8; use the shm backend", s.HeadDim)
	}
	var opts []string
	def := func(name string, v int) { opts = append(opts, fmt.Sprintf("-D%s=%d", name, v)) }
	for _, g := range []struct {
		prefix string
		geom   cpustore.Geometry
	}{{"KV_", s.Values}, {"KV_SCALE_", s.scales()}} {
		tokens, pageBytes, valueBytes, err := cpustore.Addressing(g.geom)
		if err != nil {
			return nil, err
		}
		if tokens < 1 || pageBytes%s.align() != 0 || valueBytes%s.align() != 0 {
			return nil, fmt.Errorf("geometry %+v: %d-byte pages and %d-byte values must be %d-byte multiples for the CUDA read kernel",
				g.geom, pageBytes, valueBytes, s.align())
		}
		def(g.prefix+"TOKENS_PER_PAGE", tokens)
		def(g.prefix+"PAGE_BYTES", pageBytes)
		def(g.prefix+"VALUE_BYTES", valueBytes)
	}
	def("KV_HEAD_DIM", s.HeadDim)
	def("KV_FP8", int(s.Kind))
	def("KV_READ_WARPS", Warps)
	def("KV_READ_RULE", int(s.Rule))
	def("KV_READ_TILE", Tile)
	return opts, nil
}

// Program is the CUDA C source.
func (s Spec) Program() string { return source }

package kernel

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/fncache"
)

//go:embed recipestore.cu
var source string

// blockThreads is the launch's block: one thread per row.
const blockThreads = 128

// options are the NVRTC macros of a variant and layout: the CPU kernel's
// place and arithmetic, so both backends compute from one description.
func options(variant string, l sdk.Layout) ([]string, error) {
	g, err := placeOf(l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return nil, err
	}
	b := build(variant)
	a := b.arith
	opts := []string{}
	def := func(name string, v int) { opts = append(opts, fmt.Sprintf("-D%s=%d", name, v)) }
	def("RS_HEAD_DIM", l.HeadDim)
	def("RS_GROUPS", g.groups)
	def("RS_GROUP", g.group)
	def("RS_ROPE", g.rope)
	def("RS_TOKENS", g.tokens)
	def("RS_PAGE_BYTES", g.pageBytes)
	def("RS_VALUE_STRIDE", g.valueStride)
	def("RS_SCALE_OFF", g.scaleOff)
	def("RS_SCALE_STRIDE", g.scaleStride)
	def("RS_UE8M0", b2i(g.ue8m0))
	opts = append(opts, "-DRS_EPS="+floatLiteral(a.eps))
	def("RS_TORCH", b2i(a.torch))
	def("RS_RECIP", b2i(a.recip))
	def("RS_ROUND", int(a.round))
	def("RS_PARTIAL", b2i(a.partial))
	def("RS_EXP_DOWN", b2i(a.expDown))
	def("RS_SLOT32", b2i(b.SlotBits == 32))
	return opts, nil
}

// floatLiteral writes a float32 so that the CUDA compiler reads back the
// same value: the shortest decimal that round-trips, with an f suffix.
func floatLiteral(f float32) string {
	s := strconv.FormatFloat(float64(f), 'e', -1, 32)
	return s + "f"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// kernels caches compiled functions per device and options for the life
// of the process.
type kernels struct {
	fns fncache.Cache
}

func (k *kernels) function(dev *cuda.Device, variant string, l sdk.Layout) (*cuda.Function, error) {
	opts, err := options(variant, l)
	if err != nil {
		return nil, err
	}
	return k.fns.Function(dev, "recipestore/"+l.Name, source, "recipestore_store", opts)
}

// PrepareDevice implements sdk.DevicePreparer: it compiles every pool's
// kernel, so NVRTC stays out of the first store and of graph capture. A
// pool of a layout the kernel does not store is left for its first store
// to refuse, as on the CPU.
func (s *storer) PrepareDevice(_ context.Context, a *sdk.DeviceAttach) error {
	for _, p := range a.Pools {
		if _, err := placeOf(p.Layout.Name, p.Layout.HeadDim, p.Layout.PageSize); err != nil {
			continue
		}
		if _, err := s.gpu.function(a.Device, a.Variant, p.Layout); err != nil {
			return fmt.Errorf("pool %q (%s): %w", p.Name, p.Layout.Name, err)
		}
	}
	return nil
}

// StoreDevice implements store.DeviceStorer.
func (s *storer) StoreDevice(_ context.Context, c *store.DeviceCall) error {
	if want := slotBitsOf(c.Variant); c.SlotBits != want {
		return fmt.Errorf("loc holds %d-bit slots; the %q kernel reads %d-bit ones", c.SlotBits, c.Variant, want)
	}
	f, err := s.gpu.function(c.Device, c.Variant, c.Pool.Layout)
	if err != nil {
		return err
	}
	grid := cuda.Dim3{X: uint32((max(c.Capacity, 1) + blockThreads - 1) / blockThreads)}
	return f.Launch(c.Stream, grid, cuda.Dim3{X: blockThreads}, 0,
		c.PoolBase(), c.Rows, c.Loc, c.Valid, int32(c.Capacity), int64(c.Pool.Slots))
}

// slotBitsOf is a variant's slot width.
func slotBitsOf(variant string) int {
	if build(variant).SlotBits == 32 {
		return 32
	}
	return 64
}

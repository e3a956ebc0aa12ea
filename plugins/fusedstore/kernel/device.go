package kernel

import (
	"context"
	_ "embed"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/enginestore"
	"github.com/kvharness/kvharness/plugins/internal/gpustore"
)

//go:embed fusedstore.cu
var source string

// rule is the FUSED_RULE number of a variant: its position in variants,
// counted from 1; 0 is the correct kernel (and, as in stores(), any name
// it does not know).
func rule(variant string) int {
	return slices.IndexFunc(variants, func(v sdk.Variant) bool { return v.Name == variant }) + 1
}

// spec is the CUDA kernel of a variant and layout, built from the CPU
// kernel's geometry.
func spec(variant string, l sdk.Layout) (gpustore.Spec, error) {
	g, _, err := geometry(variant, l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return gpustore.Spec{}, err
	}
	s := gpustore.Spec{Name: "fusedstore/" + l.Name, Source: source, Entry: "fusedstore_fp8", Kind: gpustore.FP8,
		HeadDim: l.HeadDim, PageSize: l.PageSize, Geometry: g, Defines: []string{fmt.Sprintf("-DFUSED_RULE=%d", rule(variant))},
		Mutation: mutations[variant], Offsets32: variant == "offset-int32"}
	if l.Name == "bf16" {
		s.Kind, s.Entry = gpustore.BF16, "fusedstore_bf16"
	}
	return s, nil
}

// mutations are the variants whose bug lives in the shared store bodies
// (store.cuh), switched on by gpustore rather than by FUSED_RULE.
var mutations = map[string]gpustore.Mutation{
	"vec16-no-tail":      gpustore.Vec16NoTail,
	"denormals-are-zero": gpustore.DenormalsAreZero,
	"zero-row-sign":      gpustore.ZeroRowSign,
	"nan-pair-scale":     gpustore.NaNPairScale,
}

// PrepareDevice implements sdk.DevicePreparer: it compiles every pool's kernel.
func (k *kernel) PrepareDevice(_ context.Context, a *sdk.DeviceAttach) error {
	return k.gpu.Prepare(a, spec)
}

// StoreDevice implements store.DeviceStorer.
func (k *kernel) StoreDevice(_ context.Context, c *store.DeviceCall) error {
	l := c.Pool.Layout
	_, engine := enginestore.BytesPerToken(l.Name, l.Heads, l.HeadDim)
	if c.Table != nil && !engine {
		return fmt.Errorf("fusedstore's CUDA page-table store writes the engine layouts (flashinfer-nhd, flashinfer-hnd, ...), not %s", l.Name)
	}
	if engine {
		b := engineBugs(c.Variant)
		b.ReservedNaNs = c.Variant == "mxfp8-reserved-write" && l.Name == "mxfp8-kv"
		return k.engine.Store(c, rule(c.Variant), b)
	}
	return k.gpu.Store(c, spec)
}

// DeviceKernel is the compiled CUDA kernel StoreDevice launches for a
// variant and layout on dev, with its grid and block for capacity rows,
// so that a test can time the very kernel the plugin runs with its own
// CUDA events, outside the SDK. Its arguments are the pool base, rows,
// loc and valid-count pointers, the capacity (int32) and the pool's slots
// (int64), as gpustore.Kernels.Launch passes them.
func DeviceKernel(dev *cuda.Device, variant string, l sdk.Layout, capacity int) (f *cuda.Function, grid, block cuda.Dim3, err error) {
	f, s, err := Plugin.Kernel.(*kernel).gpu.Kernel(dev, variant, l, capacity, spec)
	if err != nil {
		return nil, grid, block, err
	}
	grid, block = s.Shape(capacity)
	return f, grid, block, nil
}

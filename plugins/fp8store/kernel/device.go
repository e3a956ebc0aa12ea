package kernel

import (
	"context"
	_ "embed"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/gpustore"
)

//go:embed fp8store.cu
var source string

// spec is the CUDA kernel of a variant and layout: the CPU kernel's
// geometry and quantizer choices, as macros.
func spec(variant string, l sdk.Layout) (gpustore.Spec, error) {
	g, _, err := geometry(variant, l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return gpustore.Spec{}, err
	}
	return gpustore.Spec{Name: "fp8store/" + l.Name, Source: source, Entry: "fp8store_store", Kind: gpustore.FP8,
		HeadDim: l.HeadDim, PageSize: l.PageSize, Geometry: g, Quant: deviceQuantizer(variant)}, nil
}

// deviceQuantizer mirrors quantizer(): the same variants change the same
// arithmetic.
func deviceQuantizer(variant string) gpustore.Quantizer {
	return gpustore.Quantizer{NoFloor: variant == "scale-no-floor", TowardZeroE4M3: variant == "round-toward-zero"}
}

// PrepareDevice implements sdk.DevicePreparer: it compiles every pool's kernel.
func (k *kernel) PrepareDevice(_ context.Context, a *sdk.DeviceAttach) error {
	return k.gpu.Prepare(a, spec)
}

// StoreDevice implements store.DeviceStorer.
func (k *kernel) StoreDevice(_ context.Context, c *store.DeviceCall) error {
	return k.gpu.Store(c, spec)
}

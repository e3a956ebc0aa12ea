package kernel

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/gpustore"
)

//go:embed bf16scatter.cu
var source string

// spec is the CUDA scatter: bf16 rows at slot × 2·D, as Store computes.
func spec(_ string, l sdk.Layout) (gpustore.Spec, error) {
	if l.Name != "bf16" {
		return gpustore.Spec{}, fmt.Errorf("bf16scatter stores the bf16 layout only, not %s", l.Name)
	}
	row := 2 * l.HeadDim
	return gpustore.Spec{Name: "bf16scatter/bf16", Source: source, Entry: "bf16scatter_store", Kind: gpustore.BF16,
		HeadDim: l.HeadDim, PageSize: l.PageSize, Geometry: cpustore.Rows{Stride: row, ValueBytes: row}}, nil
}

// PrepareDevice implements sdk.DevicePreparer: it compiles the scatter.
func (k *scatter) PrepareDevice(_ context.Context, a *sdk.DeviceAttach) error {
	return k.gpu.Prepare(a, spec)
}

// StoreDevice implements store.DeviceStorer.
func (k *scatter) StoreDevice(_ context.Context, c *store.DeviceCall) error {
	return k.gpu.Store(c, spec)
}

package gpustore

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/sdk"
)

// SpecFunc is a plugin's kernel for a variant and layout, or an error for
// a layout it does not store.
type SpecFunc func(variant string, l sdk.Layout) (Spec, error)

// Prepare compiles the kernel of every attached pool whose layout the
// plugin stores. A pool it does not store is skipped: stores into it fail
// with the same error the CPU kernel gives, rather than the attach.
func (k *Kernels) Prepare(a *sdk.DeviceAttach, spec SpecFunc) error {
	for _, p := range a.Pools {
		s, err := spec(a.Variant, p.Layout)
		if err != nil {
			continue
		}
		if _, err := k.Function(a.Device, s); err != nil {
			return fmt.Errorf("pool %q (%s, D=%d, P=%d): %w", p.Name, p.Layout.Name, p.Layout.HeadDim, p.Layout.PageSize, err)
		}
	}
	return nil
}

// Store launches the plugin's kernel for c's variant and layout.
func (k *Kernels) Store(c *sdk.DeviceStoreCall, spec SpecFunc) error {
	s, err := spec(c.Variant, c.Pool.Layout)
	if err != nil {
		return err
	}
	return k.Launch(c, s)
}

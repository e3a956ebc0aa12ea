package gpustore

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
)

// SpecFunc is a plugin's kernel for a variant and layout, or an error for
// a layout it does not store. It must always give the same answer for the
// same arguments: Store remembers it.
type SpecFunc func(variant string, l sdk.Layout) (Spec, error)

// Prepare compiles the kernel of every attached pool whose layout the
// plugin stores. A pool it does not store is skipped: stores into it fail
// with the same error the CPU kernel gives, rather than the attach.
// The pools' kernels compile concurrently (NVRTC runs on the calling
// goroutines; only the module loads take turns on the device's thread).
func (k *Kernels) Prepare(a *sdk.DeviceAttach, spec SpecFunc) error {
	errs := make([]error, len(a.Pools))
	var wg sync.WaitGroup
	for i, p := range a.Pools {
		if _, err := spec(a.Variant, p.Layout); err != nil {
			continue
		}
		wg.Go(func() {
			if _, err := k.ready(a.Device, a.Variant, p.Layout, spec); err != nil {
				errs[i] = fmt.Errorf("pool %q (%s, D=%d, P=%d): %w", p.Name, p.Layout.Name, p.Layout.HeadDim, p.Layout.PageSize, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Store launches the plugin's kernel for c's variant and layout, tuned
// for c's capacity.
func (k *Kernels) Store(c *sdk.DeviceStoreCall, spec SpecFunc) error {
	if err := aligned(c); err != nil {
		return err
	}
	r, err := k.ready(c.Device, c.Variant, c.Pool.Layout, spec)
	if err != nil {
		return err
	}
	f, s := r.pick(c.Capacity)
	return launch(c, f, s)
}

// Kernel returns the compiled kernel Store launches for a variant, layout
// and capacity on dev, and its spec (for Shape): for timing it outside the
// SDK. Its arguments are those Launch documents.
func (k *Kernels) Kernel(dev *cuda.Device, variant string, l sdk.Layout, capacity int, spec SpecFunc) (*cuda.Function, Spec, error) {
	r, err := k.ready(dev, variant, l, spec)
	if err != nil {
		return nil, Spec{}, err
	}
	f, s := r.pick(capacity)
	return f, s, nil
}

// ready looks up, or compiles (both tunings at once) and remembers, the
// kernels for a variant and layout.
func (k *Kernels) ready(dev *cuda.Device, variant string, l sdk.Layout, spec SpecFunc) (*ready, error) {
	rk := readyKey{dev, variant, l}
	k.mu.Lock()
	r := k.readyMap()[rk]
	k.mu.Unlock()
	if r != nil {
		return r, nil
	}
	s, err := spec(variant, l)
	if err != nil {
		return nil, err
	}
	r = &ready{smallMax: -1}
	if s.Tune == nil {
		ts, err := tuningsOf(s.Kind)
		if err != nil {
			return nil, err
		}
		r.smallMax = ts.SmallMax
	}
	r.smallSpec, r.largeSpec = s.For(0), s.For(r.smallMax+1)
	var serr, lerr error
	var wg sync.WaitGroup
	if *r.smallSpec.Tune != *r.largeSpec.Tune && r.smallMax >= 0 {
		small := func() { r.small, serr = k.Function(dev, r.smallSpec) }
		if dev.InDo() {
			small() // a Store without Prepare: a goroutine's module load would queue behind this Do
		} else {
			wg.Go(small)
		}
	}
	r.large, lerr = k.Function(dev, r.largeSpec)
	wg.Wait()
	if err := errors.Join(serr, lerr); err != nil {
		return nil, err
	}
	if r.small == nil {
		r.small, r.smallSpec = r.large, r.largeSpec
	}
	k.mu.Lock()
	k.readyMap()[rk] = r
	k.mu.Unlock()
	return r, nil
}

func (k *Kernels) readyMap() map[readyKey]*ready {
	if k.prepared == nil {
		k.prepared = make(map[readyKey]*ready)
	}
	return k.prepared
}

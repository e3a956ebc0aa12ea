package gpustore

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
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
func (k *Kernels) Store(c *store.DeviceCall, spec SpecFunc) error {
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

// ready looks up, or compiles (every tier at once) and remembers, the
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
	if r, err = k.compileTiers(dev, s); err != nil {
		return nil, err
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

// compileTiers compiles s for each capacity tier of its kind's tunings
// (see tiersOf), each distinct tuning once and concurrently: NVRTC is the
// slow part. Inside a Do (a Store without Prepare) they compile one after
// another, since a goroutine's module load would queue behind that Do.
func (k *Kernels) compileTiers(dev *cuda.Device, s Spec) (*ready, error) {
	ts, err := tuningsOf(s.Kind)
	if err != nil && s.Tune == nil {
		return nil, err
	}
	tiers, shared := tiersOf(s, ts)
	errs := make([]error, len(tiers))
	var wg sync.WaitGroup
	for i := range tiers {
		if shared[i] {
			continue
		}
		compile := func() { tiers[i].f, errs[i] = k.Function(dev, tiers[i].spec) }
		if dev.InDo() {
			compile()
		} else {
			wg.Go(compile)
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range tiers {
		if shared[i] {
			tiers[i].f = tiers[i-1].f
		}
	}
	return &ready{tiers: tiers}, nil
}

// tiersOf lays out s's capacity tiers under ts: one when s has a tuning of
// its own, else one per tier of ts, each with the spec For gives at its
// bound. shared[i] says tier i has tier i-1's tuning, and so its kernel.
func tiersOf(s Spec, ts Tunings) (tiers []tier, shared []bool) {
	bounds := []int{0}
	if s.Tune == nil {
		bounds = ts.tiers()
	}
	for i, b := range bounds {
		t := tier{max: b, spec: s}
		if s.Tune == nil {
			tu := ts.pick(b)
			t.spec.Tune = &tu
		}
		tiers = append(tiers, t)
		shared = append(shared, i > 0 && *t.spec.Tune == *tiers[i-1].spec.Tune)
	}
	return tiers, shared
}

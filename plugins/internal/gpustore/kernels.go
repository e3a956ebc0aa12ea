package gpustore

import (
	"fmt"
	"sync"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/fncache"
)

// Kernels caches a plugin's compiled store kernels per device and spec, for
// the life of the process: an attach compiles (or loads from the cubin
// cache) once, every store after it only looks the function up.
type Kernels struct {
	fns      fncache.Cache
	mu       sync.Mutex          // guards prepared
	prepared map[readyKey]*ready // Store's per-launch lookups
}

// readyKey is what a plugin's SpecFunc is given: its result never changes.
type readyKey struct {
	dev     *cuda.Device
	variant string
	layout  sdk.Layout
}

// ready is a variant and layout's compiled kernels, one per capacity
// tier of its tunings (see Tunings), smallest first, so that a store's
// host work is a map lookup and the launch call: no options are formatted
// and no spec is rebuilt per launch.
type ready struct {
	tiers []tier
}

// tier is the kernel for capacities up to max (the last tier: any).
type tier struct {
	max  int
	spec Spec
	f    *cuda.Function
}

// pick is the kernel and spec for a batch of capacity rows.
func (r *ready) pick(capacity int) (*cuda.Function, Spec) {
	for _, t := range r.tiers[:len(r.tiers)-1] {
		if capacity <= t.max {
			return t.f, t.spec
		}
	}
	t := r.tiers[len(r.tiers)-1]
	return t.f, t.spec
}

// Function returns the compiled entry point of s on dev, compiling it on
// first use.
func (k *Kernels) Function(dev *cuda.Device, s Spec) (*cuda.Function, error) {
	opts, err := s.Options()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	// Prepare compiles an attach's pools at once: the cache compiles them
	// concurrently.
	return k.fns.Function(dev, s.Name, s.Program(), s.Entry, opts)
}

// Launch queues the store of c with the kernel of s on c.Stream. Its
// arguments are the pool base, rows, loc and valid-count pointers, the
// capacity and the slot count; the valid count itself is read on the
// device, so a graph capturing this launch replays correctly for any n.
func (k *Kernels) Launch(c *store.DeviceCall, s Spec) error {
	if err := aligned(c); err != nil {
		return err
	}
	s = s.For(c.Capacity)
	f, err := k.Function(c.Device, s)
	if err != nil {
		return err
	}
	return launch(c, f, s)
}

func launch(c *store.DeviceCall, f *cuda.Function, s Spec) error {
	grid, block := s.Shape(c.Capacity)
	return f.Launch(c.Stream, grid, block, 0,
		c.PoolBase(), c.Rows, c.Loc, c.Valid, int32(c.Capacity), int64(c.Pool.Slots))
}

// aligned checks what the vector accesses need: a 16-byte aligned pool
// base and rows, 8-byte slots and a 4-byte count. The kernels read int64
// slots: a call with 32-bit ones is refused rather than misread.
func aligned(c *store.DeviceCall) error {
	if c.SlotBits != 0 && c.SlotBits != 64 {
		return fmt.Errorf("loc holds %d-bit slots; the gpustore kernels read 64-bit ones (declare SlotBits 64)", c.SlotBits)
	}
	for _, a := range []struct {
		what  string
		p     cuda.Ptr
		align uint64
	}{{"pool base", c.PoolBase(), 16}, {"rows", c.Rows, 16}, {"loc", c.Loc, 8}, {"valid count", c.Valid, 4}} {
		if uint64(a.p)%a.align != 0 {
			return fmt.Errorf("%s at %#x is not %d-byte aligned; place it at an aligned arena offset", a.what, uint64(a.p), a.align)
		}
	}
	return nil
}

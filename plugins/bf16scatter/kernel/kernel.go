// Package kernel is the bf16scatter plugin: the plain scatter of the
// incident, pool[loc[i]] = rows[i] for every row of the captured batch. It
// ignores the valid count and every padding convention, so it is correct
// without padding and corrupts other requests' slots with it. kvharness
// keeps it as its reference bug; do not fix it.
package kernel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/gpustore"
)

// scatter is the plain scatter on both backends; gpu caches its compiled
// CUDA kernel (device.go).
type scatter struct {
	gpu gpustore.Kernels
}

// Store implements store.Storer.
func (*scatter) Store(_ context.Context, c *store.Call) error {
	d := c.Pool.Layout.HeadDim
	if c.Pool.Layout.Name != "bf16" {
		return fmt.Errorf("bf16scatter stores the bf16 layout only, not %s", c.Pool.Layout.Name)
	}
	put := func(i int) { cpustore.PutBF16(c.Arena, c.Pool.Base+int(c.Loc[i])*2*d, c.Rows[i*d:(i+1)*d]) }
	if c.Variant == "goroutines" {
		racing(c.Capacity, put)
		return nil
	}
	for i := range c.Capacity { // all C rows: the bug
		put(i)
	}
	return nil
}

// racing runs put for every row at once, each on a goroutine of its own
// that starts after a random pause, as a GPU's blocks run: when two rows
// aim at one slot, which lands last changes from call to call.
func racing(n int, put func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			put(i)
		})
	}
	wg.Wait()
}

// Plugin is what the plugin serves; fuzz tests link it in-process.
var Plugin = sdk.Plugin{
	Name:    "bf16scatter",
	Version: "1.0.0",
	Doc:     "buf[loc] = k: the incident's pad-unaware bf16 scatter (a deliberate bug)",
	Geometry: func(_ string, d, p int) []sdk.Geometry {
		return []sdk.Geometry{{Layout: "bf16", BytesPerToken: 2 * d, BytesPerPage: 2 * d * p}}
	},
	Variants: []sdk.Variant{{Name: "goroutines", Doc: "the same scatter, each row written by a goroutine of its own after a random pause: " +
		"which of two writers of a slot lands last changes from run to run, as on a GPU (the cpu backend only)"}},
	Kernel: &scatter{},
	Kinds:  []sdk.Kind{store.Kind},
}

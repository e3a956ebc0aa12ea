package kernel

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"sync"

	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/cpuread"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

// Read implements read.Reader: every request's list scored against its
// query, the k best written, on the CPU, for each layout gostore stores.
func (k *kernel) Read(_ context.Context, c *read.Call) error {
	l := c.Pool.Layout
	g, err := geometry(l.Name, l.HeadDim, l.PageSize)
	if err != nil {
		return err
	}
	pool := c.Arena[c.Pool.Base:]
	var keys cpuread.Keys = cpuread.FP8{Pool: pool, Values: g, Scales: g}
	if c.Variant == PowerOfTwoRead {
		keys = powerOfTwoScales{Pool: pool, Geometry: g}
	}
	if l.Name == "bf16" {
		keys = cpuread.BF16{Pool: pool, Geometry: g}
		if c.Variant == "stale-read-cache" {
			keys = k.keys.view(c.Pool.Name, pool, g, 2*l.HeadDim)
		}
	}
	cpuread.Run(c, keys, cpuread.ListSpan)
	return nil
}

// keyCache is the stale-read-cache variant's bug: a slot's key, copied
// the first time a read scores it and kept until the decode graphs are
// captured again (an empty replay: the one reset it knows), never
// invalidated when the slot's page is freed, taken by another request or
// loaded back. Within one call, or while pages never change hands, every
// read is right.
type keyCache struct {
	mu   sync.Mutex
	rows map[poolSlot][]byte
}

// reset empties the cache.
func (kc *keyCache) reset() {
	kc.mu.Lock()
	defer kc.mu.Unlock()
	kc.rows = nil
}

// view is the pool's keys as the cache sees them.
func (kc *keyCache) view(pool string, arena []byte, g cpustore.Geometry, rowBytes int) cpuread.Keys {
	return cachedKeys{kc: kc, pool: pool, live: cpuread.BF16{Pool: arena, Geometry: g}, arena: arena, g: g, n: rowBytes}
}

type cachedKeys struct {
	kc    *keyCache
	pool  string
	live  cpuread.BF16
	arena []byte
	g     cpustore.Geometry
	n     int
}

func (k cachedKeys) Score(q []float32, slot int64) float32 {
	k.kc.mu.Lock()
	defer k.kc.mu.Unlock()
	if k.kc.rows == nil {
		k.kc.rows = map[poolSlot][]byte{}
	}
	key := poolSlot{k.pool, slot}
	row, ok := k.kc.rows[key]
	if !ok {
		at, _ := k.g.Offsets(slot)
		row = slices.Clone(k.arena[at : at+k.n])
		k.kc.rows[key] = row
	}
	return cpuread.BF16{Pool: row, Geometry: cpustore.Rows{Stride: k.n, ValueBytes: k.n}}.Score(q, 0)
}

// powerOfTwoScales are fp8 keys read as a reader of power-of-two scales
// reads them: the float32 scale's sign and exponent, its mantissa
// dropped. On the scales its recipe (ue8m0) stores that is every bit;
// on amax/448 it is the power of two below.
type powerOfTwoScales struct {
	Pool     []byte
	Geometry cpustore.Geometry
}

func (k powerOfTwoScales) Score(q []float32, slot int64) float32 {
	at, sat := k.Geometry.Offsets(slot)
	var acc float32
	for i, x := range q {
		acc += x * cpuread.E4M3(k.Pool[at+i])
	}
	return acc * math.Float32frombits(binary.LittleEndian.Uint32(k.Pool[sat:])&0xff800000)
}

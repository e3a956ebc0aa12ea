package sdk_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/internal/testtier"
)

// arenaPlan lays out test pools as the harness does: each pool between two
// guards of at least a page (so slot -1 and slot N land in a guard), then
// the staging rows and slots, every window 256-byte aligned.
type arenaPlan struct {
	pools           []*kvpb.PoolDesc
	rowsOff, locOff int
	size            int
	maxCap          int
}

func align256(n int) int { return (n + 255) / 256 * 256 }

// layoutBytes is a layout's pool bytes for slots and its page bytes.
func layoutBytes(layout string, d, p, slots int) (pool, page int) {
	switch layout {
	case "bf16":
		return slots * 2 * d, 2 * d * p
	case "fp8-rows":
		return slots * (d + 4), (d + 4) * p
	case "dsv4-main": // 584 B per token, pages padded to 576 B multiples
		page = (p*584 + 575) / 576 * 576
		return (slots + p - 1) / p * page, page
	}
	return (slots + p - 1) / p * (d + 4) * p, (d + 4) * p
}

func newPlan(layouts []string, d, p, slots, maxCap int) arenaPlan {
	pl := arenaPlan{maxCap: maxCap}
	off := 0
	win := func(n int) *kvpb.Window {
		w := &kvpb.Window{Offset: uint64(off), Size: uint64(n)}
		off += n
		return w
	}
	for _, l := range layouts {
		bytes, page := layoutBytes(l, d, p, slots)
		guard := align256(max(page, 4096))
		pd := &kvpb.PoolDesc{Name: l, Slots: uint64(slots),
			Layout: &kvpb.LayoutRef{Name: l, HeadDim: uint32(d), PageSize: uint32(p)}}
		pd.GuardBefore, pd.Pool, pd.GuardAfter = win(guard), win(align256(bytes)), win(guard)
		pl.pools = append(pl.pools, pd)
	}
	pl.rowsOff = off
	pl.locOff = off + align256(maxCap*2*d)
	pl.size = pl.locOff + align256(8*maxCap)
	return pl
}

func (pl arenaPlan) attach(arena *kvpb.Arena, variant string) *kvpb.AttachRequest {
	return &kvpb.AttachRequest{Arena: arena, Pools: pl.pools, Variant: variant,
		Staging: &kvpb.Window{Offset: uint64(pl.rowsOff), Size: uint64(pl.size - pl.rowsOff)}}
}

// storeCase is one store: rows and slots for capacity rows, n valid.
type storeCase struct {
	pool, capacity, n int
	padding           kvpb.Padding
	rows              []uint16
	loc               []int64
	bits              int // staged slot width: 64 (also 0) or 32
}

func (c storeCase) request(pl arenaPlan, graph bool) *kvpb.StoreRequest {
	return &kvpb.StoreRequest{Pool: uint32(c.pool), Capacity: uint32(c.capacity), Valid: uint32(c.n),
		Padding: c.padding, RowsOffset: uint64(pl.rowsOff), LocOffset: uint64(pl.locOff), Graph: graph, SlotBits: uint32(c.bits)}
}

// stage writes the case's rows and slots into an arena image.
func (c storeCase) stage(arena []byte, pl arenaPlan) {
	for i, r := range c.rows {
		binary.LittleEndian.PutUint16(arena[pl.rowsOff+2*i:], r)
	}
	for i, l := range c.loc {
		if c.bits == 32 {
			binary.LittleEndian.PutUint32(arena[pl.locOff+4*i:], uint32(int32(l)))
		} else {
			binary.LittleEndian.PutUint64(arena[pl.locOff+8*i:], uint64(l))
		}
	}
}

// capacities repeat, so graph mode replays a captured shape with other
// valid counts.
var capacities = []int{1, 7, 64, 130}

// drawCase draws a store whose result does not depend on the order rows
// are written in, so a parallel kernel must match the sequential CPU
// kernel byte for byte: valid and stale slots are distinct, padded rows
// share one content (sink and -1 padding send them all to one slot), and
// valid slots avoid 0 and the last slot (where sink and minus1-wraps
// padding land). Under bytes-per-token-elements one token's scale is
// written over the next token's values, so slots are spaced to keep
// footprints apart.
func drawCase(rng *rand.Rand, pl arenaPlan, variant string) storeCase {
	c := storeCase{pool: rng.IntN(len(pl.pools)), capacity: min(capacities[rng.IntN(len(capacities))], pl.maxCap)}
	c.padding = kvpb.Padding(rng.IntN(4))
	c.n = c.capacity
	if c.padding != store.PadNone {
		c.n = rng.IntN(c.capacity + 1)
	}
	pd := pl.pools[c.pool]
	d := int(pd.Layout.HeadDim)
	free := slotsFor(variant, int(pd.Slots), int(pd.Layout.PageSize))
	rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	c.capacity = min(c.capacity, len(free)) // spaced slots are fewer: every row needs its own
	c.n = min(c.n, c.capacity)
	pad := drawRow(rng, d)
	for i := range c.capacity {
		if i < c.n {
			c.rows, c.loc = append(c.rows, drawRow(rng, d)...), append(c.loc, free[i])
			continue
		}
		c.rows = append(c.rows, pad...)
		switch c.padding {
		case store.PadCount:
			c.loc = append(c.loc, free[i])
		case store.PadSink:
			c.loc = append(c.loc, 0)
		default:
			c.loc = append(c.loc, -1)
		}
	}
	return c
}

func slotsFor(variant string, slots, p int) []int64 {
	var out []int64
	for s := 1; s < slots-1; s++ {
		if variant == "bytes-per-token-elements" && (s%2 != 0 || s%p < 2) {
			continue
		}
		out = append(out, int64(s))
	}
	return out
}

// drawRow draws a bf16 row of one of several kinds: raw bit patterns (NaNs
// and infinities included), gaussians of any magnitude, zeros of either
// sign (the scale floor), or small values with one spike (subnormal codes).
func drawRow(rng *rand.Rand, d int) []uint16 {
	r := make([]uint16, d)
	bf := func(x float64) uint16 { return uint16(math.Float32bits(float32(x)) >> 16) }
	switch rng.IntN(5) {
	case 0:
		for i := range r {
			r[i] = uint16(rng.Uint32())
		}
	case 1, 2:
		scale := math.Pow(10, rng.Float64()*12-6)
		for i := range r {
			r[i] = bf(rng.NormFloat64() * scale)
		}
	case 3:
		if rng.IntN(2) == 0 {
			for i := range r {
				r[i] = 0x8000
			}
		}
	case 4:
		for i := range r {
			r[i] = bf(rng.NormFloat64() * 1e-3)
		}
		r[rng.IntN(d)] = bf(rng.NormFloat64() * 1e3)
	}
	return r
}

// TestDrawCaseFits: the generator the GPU equivalence test uses draws, for
// every plugin, variant and geometry it runs, cases whose written slots are
// distinct and inside the pool: 200 draws each in the full suite, 50
// outside it.
func TestDrawCaseFits(t *testing.T) {
	draws := 50
	if testtier.Full() {
		draws = 200
	}
	for name, layouts := range layoutsOf {
		for _, g := range geometries {
			pl := newPlan(layouts, g[0], g[1], 400, 130)
			for _, variant := range variantsOf(name) {
				rng := rand.New(rand.NewPCG(1, uint64(g[0])))
				for range draws {
					c := drawCase(rng, pl, variant)
					seen := map[int64]bool{}
					for i, l := range c.loc {
						if i < c.n || c.padding == store.PadCount {
							if l < 1 || l >= int64(pl.pools[c.pool].Slots)-1 || seen[l] {
								t.Fatalf("%s %q D=%d: row %d slot %d repeats or leaves the pool", name, variant, g[0], i, l)
							}
							seen[l] = true
						}
					}
					if len(c.rows) != c.capacity*g[0] || len(c.loc) != c.capacity || c.n > c.capacity {
						t.Fatalf("%s %q D=%d: malformed case %d rows, %d slots, capacity %d, valid %d", name, variant, g[0], len(c.rows), len(c.loc), c.capacity, c.n)
					}
				}
			}
		}
	}
}

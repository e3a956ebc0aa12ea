package read

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Padding is how a composed case's store call pads its batch, as the
// store kind's conventions (store.proto).
type Padding string

// The paddings.
const (
	PadNone   Padding = "none"   // every row valid
	PadCount  Padding = "count"  // padded rows hold stale slots (the case's own): skip by count
	PadSink   Padding = "sink"   // padded rows hold slot 0, reserved: no key lives there
	PadMinus1 Padding = "minus1" // padded rows hold -1
)

// Paddings lists them in report order.
var Paddings = []Padding{PadNone, PadCount, PadSink, PadMinus1}

var wirePadding = map[Padding]kvpb.Padding{PadNone: kvpb.Padding_PADDING_NONE, PadCount: kvpb.Padding_PADDING_COUNT,
	PadSink: kvpb.Padding_PADDING_SINK, PadMinus1: kvpb.Padding_PADDING_MINUS1}

// Bounds of a composed case: keys a case stores (and every probe scores)
// and padded rows after them.
const (
	ComposeMaxKeys = 64
	composeMaxPad  = 16
)

// ComposedCase is one composed case: the keys the writer stores, in
// batch order, and the padded rows after them (their slots by the
// padding; their rows drawn).
type ComposedCase struct {
	Seed    int64   `json:"seed"`
	Padding Padding `json:"padding"`
	Keys    []Key   `json:"keys"`
	Pad     []Key   `json:"pad,omitempty"` // Slot: what the padding puts there
}

// DrawComposed draws the case of seed: the keys of a read case drawn
// from it (slots at 0, page edges, identical keys, zero, tiny and huge
// keys), no key at the sink, and up to composeMaxPad padded rows.
func DrawComposed(seed int64, pad Padding, slots, pageSize int) *ComposedCase {
	rng := rand.New(rand.NewSource(seed))
	g := &Gen{Slots: slots, PageSize: pageSize, MaxRequests: 4, MaxTokens: ComposeMaxKeys, MaxK: 16, NoMaxFinite: true}
	c := &ComposedCase{Seed: seed, Padding: pad}
	for len(c.Keys) == 0 {
		for _, k := range g.Draw(rng).Keys {
			if pad != PadSink || k.Slot != 0 {
				c.Keys = append(c.Keys, k)
			}
		}
	}
	if pad == PadNone {
		return c
	}
	for range 1 + rng.Intn(composeMaxPad) {
		slot := int64(-1)
		switch pad {
		case PadCount:
			slot = c.Keys[rng.Intn(len(c.Keys))].Slot // stale: a key's, which a kernel that stores it overwrites
		case PadSink:
			slot = 0
		}
		c.Pad = append(c.Pad, Key{Slot: slot, Vec: Vec{Kind: VecNormal, Seed: rng.Uint64()}})
	}
	return c
}

// composeStaging is where a composed case's store and read calls find
// their inputs and leave their outputs, as offsets from the staging base.
type composeStaging struct {
	base                                         int
	rows, loc                                    int
	queries, indptr, tokens, outSlots, outScores int
	size                                         int
	headDim, slotBytes                           int
}

func planComposeStaging(l *layout.Layout, slotBits int) composeStaging {
	s := composeStaging{headDim: l.HeadDim, slotBytes: max(slotBits, 32) / 8}
	next := func(n int) int {
		at := s.size
		s.size += (n + pool.Alignment - 1) / pool.Alignment * pool.Alignment
		return at
	}
	d, n, c := l.HeadDim, ComposeMaxKeys, ComposeMaxKeys+composeMaxPad
	s.rows, s.loc = next(c*l.RowBytes()), next(c*s.slotBytes)
	s.queries, s.indptr, s.tokens = next(d*2*d), next(8*(d+1)), next(8*d*n)
	s.outSlots, s.outScores = next(8*d*n), next(4*d*n)
	return s
}

// storeInputs are the store call's rows and slots, keys then padding.
func (s composeStaging) storeInputs(c *ComposedCase) (rows, loc []byte) {
	for _, k := range append(append([]Key(nil), c.Keys...), c.Pad...) {
		for _, e := range k.Vec.Data(s.headDim) {
			rows = binary.LittleEndian.AppendUint16(rows, e)
		}
		if s.slotBytes == 4 {
			loc = binary.LittleEndian.AppendUint32(loc, uint32(int32(k.Slot)))
		} else {
			loc = binary.LittleEndian.AppendUint64(loc, uint64(k.Slot))
		}
	}
	return rows, loc
}

// probeInputs are the read call's inputs: request d has the one-hot
// query on element d and every key's slot.
func (s composeStaging) probeInputs(c *ComposedCase) (queries, indptr, tokens []byte) {
	d := s.headDim
	indptr = binary.LittleEndian.AppendUint64(nil, 0)
	for e := range d {
		for j := range d {
			one := uint16(0)
			if j == e {
				one = 0x3f80 // bf16 1.0
			}
			queries = binary.LittleEndian.AppendUint16(queries, one)
		}
		for _, k := range c.Keys {
			tokens = binary.LittleEndian.AppendUint64(tokens, uint64(k.Slot))
		}
		indptr = binary.LittleEndian.AppendUint64(indptr, uint64(len(tokens)/8))
	}
	return queries, indptr, tokens
}

// write puts segments into the arena at their staging offsets.
func (p *pair) write(segs map[int][]byte) error {
	for off, b := range segs {
		if err := p.w.Mem().WriteAt(b, p.staging.base+off); err != nil {
			return err
		}
	}
	return nil
}

// store has the writer store a case's keys (and its padded rows).
func (p *pair) store(ctx context.Context, c *ComposedCase) error {
	rows, loc := p.staging.storeInputs(c)
	if err := p.write(map[int][]byte{p.staging.rows: rows, p.staging.loc: loc}); err != nil {
		return err
	}
	if err := ensure(ctx, &p.w); err != nil {
		return err
	}
	at := func(off int) uint64 { return uint64(p.staging.base + off) }
	n := len(c.Keys) + len(c.Pad)
	req := &kvpb.StoreRequest{Pool: 0, Capacity: uint32(n), Valid: uint32(len(c.Keys)), Padding: wirePadding[c.Padding],
		RowsOffset: at(p.staging.rows), LocOffset: at(p.staging.loc), SlotBits: uint32(p.staging.slotBytes * 8)}
	_, err := plugin.Call(ctx, p.w.Plugin, "Store", kvpb.NewStoreClient(p.w.Plugin.Conn()).Store, req)
	return err
}

// probe has the reader score every key against every one-hot query and
// returns, per element, each key slot's score (NaN-free or not, as the
// reader returned it) and the slots it returned that are no key's or
// returned twice.
func (p *pair) probe(ctx context.Context, c *ComposedCase) (seen []map[int64]float32, err error) {
	q, indptr, tokens := p.staging.probeInputs(c)
	if err := p.write(map[int][]byte{p.staging.queries: q, p.staging.indptr: indptr, p.staging.tokens: tokens}); err != nil {
		return nil, err
	}
	if err := ensure(ctx, &p.r); err != nil {
		return nil, err
	}
	d, n := p.staging.headDim, len(c.Keys)
	at := func(off int) uint64 { return uint64(p.staging.base + off) }
	req := &kvpb.ReadRequest{Pool: 0, Requests: uint32(d), K: uint32(n), QueriesOffset: at(p.staging.queries),
		IndptrOffset: at(p.staging.indptr), TokensOffset: at(p.staging.tokens), OutSlotsOffset: at(p.staging.outSlots),
		OutScoresOffset: at(p.staging.outScores)}
	if err := Read(ctx, p.r.Plugin, req); err != nil {
		return nil, err
	}
	slots, scores := make([]byte, 8*d*n), make([]byte, 4*d*n)
	if err := p.w.Mem().ReadAt(slots, p.staging.base+p.staging.outSlots); err != nil {
		return nil, err
	}
	if err := p.w.Mem().ReadAt(scores, p.staging.base+p.staging.outScores); err != nil {
		return nil, err
	}
	out := decodeOutput(slots, scores)
	seen = make([]map[int64]float32, d)
	for e := range d {
		seen[e] = make(map[int64]float32, n)
		for i := e * n; i < (e+1)*n; i++ {
			seen[e][out.Slots[i]] = out.Scores[i]
		}
	}
	return seen, nil
}

// records reads the bytes the writer left in a slot's footprint.
func (p *pair) records(slot int64) ([][]byte, error) {
	l, base := p.writer.Layout, p.w.Pools.Regions[0].Pool.Off
	var out [][]byte
	for _, sp := range l.Footprint(slot) {
		b := make([]byte, sp.Len)
		if err := p.w.Mem().ReadAt(b, base+sp.Off); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// CaseSeeds is the seed of each case of a row: the first is the run's
// seed, so that --seed S --cases 1 draws case S again.
func CaseSeeds(seed int64, n int) []int64 {
	out := make([]int64, n)
	rng := rand.New(rand.NewSource(seed))
	for i := range out {
		out[i] = seed
		seed = rng.Int63()
	}
	return out
}

func kernelName(k string) protocol.Kernel { return protocol.Kernel(k) }

// recipeLine is a layout's fp8 recipe, as a report states it; "" for a
// layout without fp8 fields.
func recipeLine(l *layout.Layout) string {
	if r, ok := resolvedRecipe(l); ok {
		return r.String()
	}
	return ""
}

// scaleRule is the scale rule of a layout's fp8 fields: what a reader of
// its scales must agree on ("" without fp8 fields).
func scaleRule(l *layout.Layout) layout.ScaleRule {
	r, _ := resolvedRecipe(l)
	return r.Scale
}

// resolvedRecipe is the recipe of a layout's first fp8 field, its scale
// rule resolved from the scale field's kind where the recipe leaves it.
func resolvedRecipe(l *layout.Layout) (layout.Recipe, bool) {
	for _, f := range l.Fields {
		if f.Kind == layout.KindE4M3 || f.Kind == layout.KindE5M2 {
			r := layout.Recipe{}
			if f.Recipe != nil {
				r = *f.Recipe
			}
			if r.Scale == layout.ScaleByField { // say the rule the scale field's kind gives
				r.Scale = layout.ScaleF32
				for _, s := range l.Fields {
					if s.Of == f.Name && s.Kind == layout.KindScaleUE8M0 {
						r.Scale = layout.ScaleUE8M0
					}
				}
			}
			return r, true
		}
	}
	return layout.Recipe{}, false
}

func (c *ComposedCase) String() string {
	slots := make([]int64, len(c.Keys))
	for i, k := range c.Keys {
		slots[i] = k.Slot
	}
	return fmt.Sprintf("%d key%s at slots %s, %d padded row%s (%s)", len(c.Keys), plural(len(c.Keys)), readSlotList(slots, 12),
		len(c.Pad), plural(len(c.Pad)), c.Padding)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

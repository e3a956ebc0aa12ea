package store

import (
	"encoding/binary"
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// Decode turns fuzz bytes into a valid store case for a pool of slots.
// Reading past the end yields zeros, so every input, empty included,
// decodes to a valid case. The format, byte by byte:
//
//	padding        1   convention, mod 4
//	capacity       2   1 + value mod max capacity
//	valid          2   value mod (capacity+1), capped by the usable slots
//	per valid row: slot choice (see slot), row kind 1, row seed 1
//	per padded row (count only: slot choice), row kind 1, row seed 1
//
// A slot choice is one byte selecting a rule — the lowest usable slot, the
// last slot, a page edge (2 more bytes: page), a neighbour of the previous
// valid slot, or a raw slot (4 more bytes) — so the mutator reaches the
// places kernels get wrong with single-byte changes. Valid slots that
// collide move to the next free slot, keeping them unique by construction.
func Decode(data []byte, slots, pageSize, maxCapacity int) *Case {
	s := workload.NewStream(data)
	g := &Gen{Slots: slots, PageSize: pageSize, Padding: Paddings[int(s.Byte())%len(Paddings)]}
	c := 1 + int(s.Uint(2))%maxCapacity
	n := int(s.Uint(2)) % (c + 1)
	if g.Padding == PadNone {
		n = c
	}
	n = min(n, g.usable())
	if g.Padding == PadNone {
		c = n
	}
	out := &Case{Padding: g.Padding, Valid: n, Loc: make([]int64, c), Rows: make([]workload.Row, c)}
	taken := make([]int64, 0, n) // sorted
	for i := range n {
		out.Loc[i] = g.free(g.choose(s, out.Loc[:i]), taken)
		at, _ := slices.BinarySearch(taken, out.Loc[i])
		taken = slices.Insert(taken, at, out.Loc[i])
		out.Rows[i] = workload.Row{Kind: validKinds[int(s.Byte())%len(validKinds)], Seed: uint64(s.Byte())}
	}
	for i := n; i < c; i++ {
		out.Loc[i] = g.Padding.Canonical()
		if g.Padding == PadCount {
			out.Loc[i] = g.clamp(g.choose(s, out.Loc[:n]))
		}
		out.Rows[i] = workload.Row{Kind: workload.RowKind(int(s.Byte()) % numRowKinds), Seed: uint64(s.Byte())}
	}
	return out
}

// validKinds are the value classes a valid row's kind byte picks among,
// by index: every class but garbage, the first four where the byte's
// value was their kind before the others came, so old corpora read as
// they did.
var validKinds = []workload.RowKind{workload.RowZero, workload.RowNormal, workload.RowTiny, workload.RowOutlier,
	workload.RowSubnormal, workload.RowSignedZero, workload.RowMaxFinite, workload.RowBoundary, workload.RowNonFinite}

// numRowKinds is how many kinds a padded row's kind byte picks among:
// every one, garbage included.
const numRowKinds = int(workload.RowNonFinite) + 1

// choose applies one slot-choice rule (workload.Stream.Slot); the result
// may be out of range or taken, which the caller fixes.
func (g *Gen) choose(s *workload.Stream, chosen []int64) int64 {
	return s.Slot(s.Byte()%workload.NumChoices, g.Slots, int64(max(g.PageSize, 1)), g.lowest(), chosen)
}

func (g *Gen) clamp(slot int64) int64 {
	if slot < 0 || slot >= int64(g.Slots) {
		return slot % int64(g.Slots)
	}
	return slot
}

// free moves a slot into range and, if taken (taken is sorted), to the
// next free one. The probe walks taken alongside: rows that all choose
// one slot (an input of zeros) probe past every earlier row's.
func (g *Gen) free(slot int64, taken []int64) int64 {
	u := int64(g.usable())
	slot = g.lowest() + (slot-g.lowest()%u+u)%u
	i, _ := slices.BinarySearch(taken, slot)
	for i < len(taken) && taken[i] == slot {
		slot = g.lowest() + (slot-g.lowest()+1)%u
		if i++; slot == g.lowest() { // wrapped
			i, _ = slices.BinarySearch(taken, slot)
		}
	}
	return slot
}

// Encode is Decode's inverse for valid cases whose capacity fits the
// decoder's maximum and whose row seeds fit a byte (fuzz rows carry one
// seed byte): Decode(Encode(c)) equals c. Seed corpora are written with
// it, so each seed reads as a case.
func Encode(c *Case, maxCapacity int) []byte {
	var out []byte
	put := func(v uint64, n int) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		out = append(out, b[:n]...)
	}
	out = append(out, byte(c.Padding))
	put(uint64((c.Capacity()-1)%maxCapacity), 2)
	put(uint64(c.Valid), 2)
	for i := range c.Capacity() {
		if i < c.Valid || c.Padding == PadCount {
			out = append(out, workload.ChoiceRaw)
			put(uint64(c.Loc[i]), 4)
		}
		kind := byte(c.Rows[i].Kind)
		if i < c.Valid {
			kind = byte(slices.Index(validKinds, c.Rows[i].Kind))
		}
		out = append(out, kind, byte(c.Rows[i].Seed))
	}
	return out
}

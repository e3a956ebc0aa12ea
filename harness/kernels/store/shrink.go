package store

import (
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// smallCase is the capacity up to which the shrinker tries every row,
// slot and datum on its own; above it, it works on groups of them, so a
// step costs tens of checks rather than one per row.
const smallCase = 64

// Shrink returns smaller variants of a failing case, most aggressive
// first: fewer rows, then smaller slots, then simpler padding values and
// row data. Every variant is valid for the same pool when s is. The
// property runner keeps the first variant that still fails and shrinks
// again from it, so the result is a local minimum: no single step here
// makes it smaller.
//
// A small case tries each row alone first (most padding bugs need
// exactly one), then halves, chunks and trims. A large one halves first
// and keeps the rows alone for last: the runner starts the list afresh
// after every step that sticks, so hundreds of one-row candidates ahead
// of the halves would be checked again at every step, and a bug that
// needs 257 rows (a tile offset) would spend the candidate bound before
// reaching them. Halving reaches a one-row bug in a few steps anyway.
// Where halving stalls (a bug that needs more than half the rows), ever
// smaller chunks are dropped and either end trimmed, down to a single
// row, so a case can lose any row that does not matter.
func Shrink(s *Case) []*Case {
	if s.Capacity() <= smallCase {
		return slices.Concat(singleRows(s), groupRows(s), trimTable(s), shrinkSlots(s), shrinkData(s))
	}
	return slices.Concat(groupRows(s), trimTable(s), shrinkSlots(s), shrinkData(s), singleRows(s))
}

func parts(s *Case) (valid, padded []int) {
	for i := range s.Capacity() {
		if i < s.Valid {
			valid = append(valid, i)
		} else {
			padded = append(padded, i)
		}
	}
	return valid, padded
}

// pick builds a case from the given valid and padded row indices.
func pick(s *Case, valid, padded []int) *Case {
	if len(valid)+len(padded) == 0 {
		return nil
	}
	if s.Padding == PadNone && len(padded) > 0 {
		return nil
	}
	out := &Case{Padding: s.Padding, Valid: len(valid)}
	rows := append(append([]int(nil), valid...), padded...)
	for _, i := range rows {
		out.Loc = append(out.Loc, s.Loc[i])
		out.Rows = append(out.Rows, s.Rows[i])
	}
	if s.Table != nil {
		out.Table = s.Table.Pick(rows) // the same requests and pages, fewer rows
	}
	return out
}

// rowShrinks collects the cases with fewer rows than s among those added.
type rowShrinks struct {
	s   *Case
	out []*Case
}

func (r *rowShrinks) add(c *Case) {
	if c != nil && c.Capacity() < r.s.Capacity() {
		r.out = append(r.out, c)
	}
}

// singleRows is each row alone: padded ones, then valid ones.
func singleRows(s *Case) []*Case {
	v, p := parts(s)
	r := rowShrinks{s: s}
	for _, i := range p {
		r.add(pick(s, nil, []int{i}))
	}
	for _, i := range v {
		r.add(pick(s, []int{i}, nil))
	}
	return r.out
}

// groupRows drops groups of rows: all padded ones, all valid ones, then
// fewer of the valid rows, then fewer of the padded.
func groupRows(s *Case) []*Case {
	v, p := parts(s)
	r := rowShrinks{s: s}
	r.add(pick(s, v, nil))
	r.add(pick(s, nil, p))
	for _, keep := range fewer(v) {
		r.add(pick(s, keep, p))
	}
	for _, keep := range fewer(p) {
		r.add(pick(s, v, keep))
	}
	return r.out
}

// fewer lists subsets of xs, order kept, each missing some of them: the
// halves; then, as halving may stall, xs without each quarter, eighth and
// sixteenth, and xs trimmed at either end by ever fewer; and, for small
// cases, xs without each single one. Every removal of the chunks and
// trims is tried before a finer one, so a step that can drop many drops
// many.
func fewer(xs []int) [][]int {
	n := len(xs)
	if n < 2 {
		return nil
	}
	out := [][]int{xs[:n/2], xs[n/2:]}
	for k := 4; k <= 16 && k <= n; k *= 2 {
		size := (n + k - 1) / k
		for lo := 0; lo < n; lo += size {
			out = append(out, slices.Concat(xs[:lo], xs[min(lo+size, n):]))
		}
	}
	for cut := n / 4; cut >= 1; cut /= 2 {
		out = append(out, xs[:n-cut], xs[cut:])
	}
	if n <= smallCase {
		for j := range xs {
			out = append(out, workload.Without(xs, j))
		}
	}
	return out
}

// shrinkSlots moves slots toward the lowest free ones: all valid slots at
// once to the lowest ones (in row order), then, in small cases, each on
// its own; padded stale slots toward 0.
func shrinkSlots(s *Case) []*Case {
	if s.Table != nil {
		return nil // a page table's slots follow from its pages, not moved one by one
	}
	lowest := int64(0)
	if s.Padding == PadSink {
		lowest = 1
	}
	var out []*Case
	if c, ok := packedSlots(s, lowest); ok {
		out = append(out, c)
	}
	if s.Capacity() <= smallCase {
		out = append(out, eachSlot(s, lowest)...)
	}
	if s.Padding == PadCount {
		out = append(out, paddedSlots(s)...)
	}
	return out
}

// packedSlots puts the valid rows into slots lowest, lowest+1, … in row
// order; false when they are there already.
func packedSlots(s *Case, lowest int64) (*Case, bool) {
	c := s.Clone()
	changed := false
	for i := range s.Valid {
		to := lowest + int64(i)
		changed = changed || c.Loc[i] != to
		c.Loc[i] = to
	}
	return c, changed
}

// eachSlot moves one valid slot at a time down, where no other valid row
// holds the target: to the lowest slot, then by half the way, a quarter,
// an eighth… and by one. A slot whose bug holds over a band (a 32-bit
// offset wraps past 2 GiB: every slot above one fails alike) gallops to
// the band's edge in a few dozen steps instead of walking it slot by slot.
func eachSlot(s *Case, lowest int64) []*Case {
	taken := make(map[int64]bool, s.Valid)
	for _, slot := range s.Loc[:s.Valid] {
		taken[slot] = true
	}
	var out []*Case
	for i, slot := range s.Loc[:s.Valid] {
		for _, to := range slotSteps(slot, lowest) {
			if to < lowest || to >= slot || taken[to] {
				continue
			}
			c := s.Clone()
			c.Loc[i] = to
			out = append(out, c)
		}
	}
	return out
}

// slotSteps are the slots a shrinker tries for slot, most aggressive
// first: the lowest, then slot less half its distance from it, a quarter,
// and so on down to one.
func slotSteps(slot, lowest int64) []int64 {
	out := []int64{lowest}
	for d := (slot - lowest) / 2; d >= 1; d /= 2 {
		out = append(out, slot-d)
	}
	if out[len(out)-1] != slot-1 {
		out = append(out, slot-1)
	}
	return out
}

// paddedSlots moves stale padded slots toward 0: all at once, then, in
// small cases, each alone (to 0 or half way).
func paddedSlots(s *Case) []*Case {
	var out []*Case
	all := s.Clone()
	changed := false
	for i := s.Valid; i < s.Capacity(); i++ {
		changed = changed || all.Loc[i] != 0
		all.Loc[i] = 0
	}
	if changed && s.Capacity() > smallCase {
		out = append(out, all)
	}
	if s.Capacity() > smallCase {
		return out
	}
	for i := s.Valid; i < s.Capacity(); i++ {
		for _, to := range []int64{0, s.Loc[i] / 2} {
			if to < s.Loc[i] {
				c := s.Clone()
				c.Loc[i] = to
				out = append(out, c)
			}
		}
	}
	return out
}

// shrinkData simplifies row data: in small cases each row to the simplest
// row (normal, seed 0); in large ones every row at once to normal data
// seeded by its index, which keeps the rows distinct (a bug that mixes
// rows up needs them to differ).
func shrinkData(s *Case) []*Case {
	if s.Capacity() > smallCase {
		c := s.Clone()
		changed := false
		for i := range c.Rows {
			r := workload.Row{Kind: workload.RowNormal, Seed: uint64(i)}
			changed = changed || c.Rows[i] != r
			c.Rows[i] = r
		}
		if !changed {
			return nil
		}
		return []*Case{c}
	}
	var out []*Case
	simple := workload.Row{Kind: workload.RowNormal}
	for i, r := range s.Rows {
		if r == simple || r.Kind == workload.RowZero {
			continue
		}
		c := s.Clone()
		c.Rows[i] = simple
		out = append(out, c)
	}
	return out
}

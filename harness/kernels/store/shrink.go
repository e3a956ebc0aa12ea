package store

import "github.com/kvharness/kvharness/harness/workload"

// Shrink returns smaller variants of a failing case, most aggressive
// first: fewer rows, then smaller slots, then simpler padding values and
// row data. Every variant is valid for the same pool when s is. The
// property runner keeps the first variant that still fails and shrinks
// again from it, so the result is a local minimum: no single step here
// makes it smaller.
func Shrink(s *Case) []*Case {
	var out []*Case
	out = append(out, shrinkRows(s)...)
	out = append(out, shrinkSlots(s)...)
	out = append(out, shrinkData(s)...)
	return out
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
	for _, i := range append(append([]int(nil), valid...), padded...) {
		out.Loc = append(out.Loc, s.Loc[i])
		out.Rows = append(out.Rows, s.Rows[i])
	}
	return out
}

func shrinkRows(s *Case) []*Case {
	v, p := parts(s)
	var out []*Case
	add := func(c *Case) {
		if c != nil && c.Capacity() < s.Capacity() {
			out = append(out, c)
		}
	}
	// Single rows first: most padding bugs need exactly one.
	for _, i := range p {
		add(pick(s, nil, []int{i}))
	}
	for _, i := range v {
		add(pick(s, []int{i}, nil))
	}
	add(pick(s, v, nil))
	add(pick(s, nil, p))
	add(pick(s, v[:len(v)/2], p))
	add(pick(s, v[len(v)/2:], p))
	add(pick(s, v, p[:len(p)/2]))
	add(pick(s, v, p[len(p)/2:]))
	if s.Capacity() <= 64 {
		for j := range v {
			add(pick(s, workload.Without(v, j), p))
		}
		for j := range p {
			add(pick(s, v, workload.Without(p, j)))
		}
	}
	return out
}

func shrinkSlots(s *Case) []*Case {
	lowest := int64(0)
	if s.Padding == PadSink {
		lowest = 1
	}
	taken := make(map[int64]bool, s.Valid)
	for _, slot := range s.Loc[:s.Valid] {
		taken[slot] = true
	}
	var out []*Case
	for i, slot := range s.Loc[:s.Valid] {
		for _, to := range []int64{lowest, lowest + (slot-lowest)/2, slot - 1} {
			if to < lowest || to >= slot || taken[to] {
				continue
			}
			c := s.Clone()
			c.Loc[i] = to
			out = append(out, c)
		}
	}
	if s.Padding == PadCount {
		for i := s.Valid; i < s.Capacity(); i++ {
			for _, to := range []int64{0, s.Loc[i] / 2} {
				if to < s.Loc[i] {
					c := s.Clone()
					c.Loc[i] = to
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func shrinkData(s *Case) []*Case {
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

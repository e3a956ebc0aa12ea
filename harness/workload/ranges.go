package workload

import (
	"math/rand"
	"slices"
)

// Range is the slots [Lo, Hi).
type Range struct{ Lo, Hi int64 }

// Ranges are the slots a generator may draw from, sorted and disjoint:
// the windows of a pool that reaches far (past 4 GiB of byte offsets)
// whose other pages stay holes. Nil is no restriction.
type Ranges []Range

// Whole is the ranges of every slot of a pool.
func Whole(slots int) Ranges { return Ranges{{0, int64(slots)}} }

// Merged sorts rs and joins ranges that overlap or touch, clipped to
// [0, slots).
func Merged(rs []Range, slots int) Ranges {
	var in []Range
	for _, r := range rs {
		r.Lo, r.Hi = max(r.Lo, 0), min(r.Hi, int64(slots))
		if r.Lo < r.Hi {
			in = append(in, r)
		}
	}
	slices.SortFunc(in, func(a, b Range) int { return int(a.Lo - b.Lo) })
	var out Ranges
	for _, r := range in {
		if n := len(out); n > 0 && r.Lo <= out[n-1].Hi {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Contains reports whether slot s is in a range.
func (rs Ranges) Contains(s int64) bool {
	i, _ := slices.BinarySearchFunc(rs, s, func(r Range, s int64) int {
		switch {
		case r.Hi <= s:
			return -1
		case r.Lo > s:
			return 1
		}
		return 0
	})
	return i < len(rs) && rs[i].Lo <= s && s < rs[i].Hi
}

// Size is how many slots the ranges hold.
func (rs Ranges) Size() int64 {
	var n int64
	for _, r := range rs {
		n += r.Hi - r.Lo
	}
	return n
}

// Nth is the i-th slot of the ranges in order, i in [0, Size()).
func (rs Ranges) Nth(i int64) int64 {
	for _, r := range rs {
		if i < r.Hi-r.Lo {
			return r.Lo + i
		}
		i -= r.Hi - r.Lo
	}
	return -1
}

// Random is a slot of a range chosen uniformly (each window as likely as
// the next, however few slots it holds), then a slot of it uniformly.
func (rs Ranges) Random(rng *rand.Rand) int64 {
	r := rs[rng.Intn(len(rs))]
	return r.Lo + rng.Int63n(r.Hi-r.Lo)
}

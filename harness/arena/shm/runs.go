package shm

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/kvharness/kvharness/harness/pool"
)

// appendRuns adds to out the maximal runs of bytes where got differs from
// want (both start at arena offset off), extending out's last window when
// a run starts where it ends. It walks eight bytes at a time: a run ends
// at the first byte that agrees, which a word with a zero byte in its
// XOR holds.
func appendRuns(out []pool.Window, got, want []byte, off int) []pool.Window {
	for i := firstDiff(got, want, 0); i < len(got); i = firstDiff(got, want, i) {
		j := firstSame(got, want, i)
		if n := len(out); n > 0 && out[n-1].End() == off+i {
			out[n-1].Len += j - i
		} else {
			if len(out) == cap(out) {
				// Doubled, not the quarter append adds to a large slice: a
				// scan of an engine cache's case finds hundreds of
				// thousands of runs (vLLM's paged V: two bytes a head
				// element), and each growth copies them all.
				out = slices.Grow(out, max(len(out), 64))
			}
			out = append(out, pool.Window{Off: off + i, Len: j - i})
		}
		i = j
	}
	return out
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// firstDiff is the first index from i where a and b differ, or len(a).
func firstDiff(a, b []byte, i int) int {
	for ; i+8 <= len(a); i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < len(a) && a[i] == b[i]; i++ {
	}
	return i
}

// firstSame is the first index from i where a and b agree, or len(a).
// (x - ones) &^ x & highs sets the high bit of x's lowest zero byte (and
// maybe of higher ones, which the trailing-zero count ignores).
func firstSame(a, b []byte, i int) int {
	for ; i+8 <= len(a); i += 8 {
		x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
		if z := (x - ones) &^ x & highs; z != 0 {
			return i + bits.TrailingZeros64(z)/8
		}
	}
	for ; i < len(a) && a[i] != b[i]; i++ {
	}
	return i
}

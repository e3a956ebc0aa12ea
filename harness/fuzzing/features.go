package fuzzing

import (
	"math/bits"
	"strconv"
)

// The names a kind's Features gives its cases come from these, so that
// every kind says "how many" and "where" in the same words.

// Count names n to a power of two ("rows<8" for 4 to 7 rows): a fuzzer
// that keeps an input for each new name reaches every size class, not
// every size.
func Count(name string, n int) string {
	return name + "<" + strconv.Itoa(1<<bits.Len(uint(max(n, 0))))
}

// Positions names where each index of idx sits among size indices in
// units of unit (slots in pages, pages in registration chunks): the first
// or last index, a unit's first or last, next to the previous index, and
// how many bits it takes (past 16 is where a narrowed index aliases).
// who prefixes every name.
func Positions(who string, idx []int64, size, unit int64) []string {
	var out []string
	for i, x := range idx {
		out = append(out, who+"-bits="+strconv.Itoa(bits.Len64(uint64(max(x, 0)))))
		switch {
		case x < 0:
			out = append(out, who+"=negative")
		case x == 0:
			out = append(out, who+"=first")
		case x == size-1:
			out = append(out, who+"=last")
		case unit > 1 && x%unit == 0:
			out = append(out, who+"=unit-first")
		case unit > 1 && x%unit == unit-1:
			out = append(out, who+"=unit-last")
		}
		if i > 0 && x == idx[i-1]+1 {
			out = append(out, who+"=next")
		}
	}
	return out
}

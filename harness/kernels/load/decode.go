package load

import (
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/workload"
)

// Fuzz bytes become a load case by the rule every kind's decoder follows:
// a stream of choices, zeros past the end, so every input is a valid case
// over base. The format, byte by byte:
//
//	op        1   bit 0: a store (else a load)
//	layers    1   1 + value mod base.Layers
//	first     1   the first global layer: value mod 8
//	buffers   1   bit i keeps base buffer i (none set: all)
//	order     1   the reading order: permutation value mod n! of the canonical order
//	pages     1   1 + value mod min(4, base.Pages); then per page a source and a
//	              destination byte, each moved to the next page free on its side
//	late      1   value mod 4 items; each 3 bytes: layer, buffer, page (mod theirs)
//	inputs    1   stores: as late, the caller's input writes held
//	fail      1   loads: as late, failing copies
//	readers   1   value mod (pages+1) indices; each 1 byte (mod pages)
//
// Repeated items and readers are dropped.
func Decode(data []byte, base Geometry) *Case {
	s := workload.NewStream(data)
	c := &Case{Geometry: base, Op: OpLoad}
	if s.Byte()&1 == 1 {
		c.Op = OpStore
	}
	c.Layers = 1 + int(s.Byte())%base.Layers
	c.FirstLayer = int(s.Byte()) % 8
	mask := s.Byte()
	for i, b := range base.Buffers {
		if mask&(1<<i) != 0 || mask&(1<<len(base.Buffers)-1) == 0 {
			c.Buffers = append(c.Buffers, b.Name)
		}
	}
	c.Order = permute(canonicalOrder(c.Buffers), int(s.Byte()))
	src, dst := make([]bool, base.Pages), make([]bool, base.Pages)
	for range 1 + int(s.Byte())%min(maxCasePages, base.Pages) {
		c.Pages = append(c.Pages, Page{Src: nextFree(src, int(s.Byte())), Dst: nextFree(dst, int(s.Byte()))})
	}
	c.Late = decodeItems(s, c)
	if c.Op == OpStore {
		c.LateInputs = decodeItems(s, c)
	} else {
		s.Byte()
	}
	if c.Op == OpLoad {
		c.Fail = decodeItems(s, c)
	} else {
		s.Byte()
	}
	for range int(s.Byte()) % (len(c.Pages) + 1) {
		if r := int(s.Byte()) % len(c.Pages); !slices.Contains(c.Readers, r) {
			c.Readers = append(c.Readers, r)
		}
	}
	return c
}

// nextFree takes the first free page at or after v mod len(taken).
func nextFree(taken []bool, v int) int {
	p := v % len(taken)
	for taken[p] {
		p = (p + 1) % len(taken)
	}
	taken[p] = true
	return p
}

// permute is the k-th permutation of xs (mod len(xs)!), k = 0 the identity.
func permute(xs []string, k int) []string {
	n := 1
	for i := 2; i <= len(xs); i++ {
		n *= i
	}
	k %= n
	rest, out := slices.Clone(xs), make([]string, 0, len(xs))
	for len(rest) > 0 {
		n /= len(rest)
		i := k / n
		k %= n
		out = append(out, rest[i])
		rest = slices.Delete(rest, i, i+1)
	}
	return out
}

func decodeItems(s *workload.Stream, c *Case) []Item {
	var out []Item
	for range int(s.Byte()) % 4 {
		it := Item{Layer: int(s.Byte()) % c.Layers, Buffer: c.Buffers[int(s.Byte())%len(c.Buffers)], Page: int(s.Byte()) % len(c.Pages)}
		if !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	return out
}

// Encode is Decode's inverse for a case over base whose pages are free
// where they stand and whose lists are short enough for the format: seed
// corpora are written with it.
func Encode(c *Case, base Geometry) ([]byte, error) {
	if c.Geometry.Key() != base.Key() || c.FirstLayer >= 8 || len(c.Pages) > min(maxCasePages, base.Pages) ||
		len(c.Late) > 3 || len(c.LateInputs) > 3 || len(c.Fail) > 3 || len(c.Readers) > len(c.Pages) {
		return nil, fmt.Errorf("case %v does not fit the fuzz format over %v", c, base)
	}
	out := []byte{0, byte(c.Layers - 1), byte(c.FirstLayer), 0}
	if c.Op == OpStore {
		out[0] = 1
	}
	for _, b := range c.Buffers {
		out[3] |= 1 << base.Index(b)
	}
	k, ok := permutationIndex(canonicalOrder(c.Buffers), c.Order)
	if !ok {
		return nil, fmt.Errorf("order %v is not a permutation of %v", c.Order, c.Buffers)
	}
	out = append(out, byte(k), byte(len(c.Pages)-1))
	for _, p := range c.Pages {
		out = append(out, byte(p.Src), byte(p.Dst))
	}
	for _, items := range [][]Item{c.Late, c.LateInputs, c.Fail} {
		out = append(out, byte(len(items)))
		for _, it := range items {
			out = append(out, byte(it.Layer), byte(c.buffer(it.Buffer)), byte(it.Page))
		}
	}
	out = append(out, byte(len(c.Readers)))
	for _, r := range c.Readers {
		out = append(out, byte(r))
	}
	return out, nil
}

func permutationIndex(xs, perm []string) (int, bool) {
	for k := range 720 {
		if slices.Equal(permute(xs, k), perm) {
			return k, true
		}
	}
	return 0, false
}

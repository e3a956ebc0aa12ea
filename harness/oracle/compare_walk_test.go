package oracle

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/pool"
)

// TestFirstDifferenceMatchesByteMaps: the windowed walk finds what
// indexing every byte of both deltas finds, on random deltas that share
// windows, differ in a byte, or hold windows the other lacks.
func TestFirstDifferenceMatchesByteMaps(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := range 3000 {
		a := randomDelta(rng)
		b := a
		switch trial % 4 {
		case 1: // one byte differs
			b = cloneDelta(a)
			if len(b.Bytes) > 0 {
				b.Bytes[rng.Intn(len(b.Bytes))] ^= 0x40
			}
		case 2: // unrelated
			b = randomDelta(rng)
		case 3: // a prefix of the windows
			b = cloneDelta(a)
			n := rng.Intn(len(b.Windows) + 1)
			size := 0
			for _, w := range b.Windows[:n] {
				size += w.Len
			}
			b.Windows, b.Bytes = b.Windows[:n], b.Bytes[:size]
		}
		off, wa, wb := firstDifference(a, b)
		wantOff, wantA, wantB := mapDifference(a, b)
		if off != wantOff || !slices.Equal(wa, wantA) || !slices.Equal(wb, wantB) {
			t.Fatalf("trial %d: got %d %x %x, want %d %x %x\na=%v\nb=%v", trial, off, wa, wb, wantOff, wantA, wantB, a.Windows, b.Windows)
		}
	}
}

func randomDelta(rng *rand.Rand) Delta {
	var d Delta
	off := rng.Intn(40) - 20
	for range rng.Intn(6) {
		off += rng.Intn(30) + 1 // a gap: Changed merges touching windows
		n := rng.Intn(70)
		d.Windows = append(d.Windows, pool.Window{Off: off, Len: n})
		for range n {
			d.Bytes = append(d.Bytes, byte(rng.Intn(3)))
		}
		off += n
	}
	return d
}

func cloneDelta(d Delta) Delta {
	return Delta{Windows: slices.Clone(d.Windows), Bytes: slices.Clone(d.Bytes)}
}

// mapDifference is the byte-map reference the walk replaced.
func mapDifference(a, b Delta) (int, []byte, []byte) {
	ia, ib := byteMap(a), byteMap(b)
	best, found := 0, false
	for off, x := range ia {
		if y, ok := ib[off]; (!ok || x != y) && (!found || off < best) {
			best, found = off, true
		}
	}
	for off := range ib {
		if _, ok := ia[off]; !ok && (!found || off < best) {
			best, found = off, true
		}
	}
	if !found {
		return -1, nil, nil
	}
	return best, mapFrom(ia, best), mapFrom(ib, best)
}

func byteMap(d Delta) map[int]byte {
	m := map[int]byte{}
	i := 0
	for _, w := range d.Windows {
		for k := range w.Len {
			m[w.Off+k] = d.Bytes[i]
			i++
		}
	}
	return m
}

func mapFrom(m map[int]byte, off int) []byte {
	var out []byte
	for k := 0; k < MaxShown; k++ {
		b, ok := m[off+k]
		if !ok {
			break
		}
		out = append(out, b)
	}
	return out
}

package oracle

// Compare describes where two deltas first differ, as a violation whose
// want is the reference run's bytes and got the other run's.
func Compare(kind Kind, a, b Delta, detail string) Violation {
	v := Violation{Kind: kind, Row: NoRow, Detail: detail}
	off, wa, wb := firstDifference(a, b)
	v.Off, v.Len, v.Want, v.Got = off, max(len(wa), len(wb)), wa, wb
	return v
}

// firstDifference returns the first pool offset where the pools the two
// deltas leave differ, and up to MaxShown bytes of each from there (nil
// where that delta left the background).
func firstDifference(a, b Delta) (int, []byte, []byte) {
	ia, ib := bytesAt(a), bytesAt(b)
	best := -1
	for off, x := range ia {
		if y, ok := ib[off]; !ok || x != y {
			if best < 0 || off < best {
				best = off
			}
		}
	}
	for off := range ib {
		if _, ok := ia[off]; !ok && (best < 0 || off < best) {
			best = off
		}
	}
	return best, bytesFrom(ia, best), bytesFrom(ib, best)
}

func bytesAt(d Delta) map[int]byte {
	m := make(map[int]byte, len(d.Bytes))
	i := 0
	for _, w := range d.Windows {
		for k := range w.Len {
			m[w.Off+k] = d.Bytes[i]
			i++
		}
	}
	return m
}

func bytesFrom(m map[int]byte, off int) []byte {
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

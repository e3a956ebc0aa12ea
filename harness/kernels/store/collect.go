package store

import (
	"sort"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/workload"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// wrongByte is one pool byte whose content differs from a correct run's.
type wrongByte struct {
	off       int // from the pool base
	got, want byte
	row       int // valid row whose footprint holds it, or NoRow
}

type classifier struct {
	sc        *Oracle
	delta     oracle.Delta
	wrong     []wrongByte
	untouched map[int]bool           // valid rows whose footprint kept the background
	stride    *misread               // the misreading that explains the wrong bytes, if one does
	records   map[int]map[string]int // per plane: valid rows by record (recordIndex)
	padded    map[int]map[string]int // per plane: padded rows by record (paddedIndex)
	judged    judgement              // value judgement's findings and verdicts (value.go)
	out       []oracle.Violation
	run       *oracle.Violation
	starts    []int // starts[i] is where delta window i's bytes begin in delta.Bytes
	seekAt    int   // the window seek found last
}

// got returns the bytes of window w (pool offsets) after the run.
func (v *classifier) got(w pool.Window) []byte { return v.gotInto(make([]byte, w.Len), w) }

// gotInto is got written into out, w.Len long.
func (v *classifier) gotInto(out []byte, w pool.Window) []byte {
	pool.FillBackground(out, v.sc.Seed, w.Off+v.sc.Region.GuardBefore.Len)
	ws := v.delta.Windows
	i := v.seek(w.Off)
	if i == len(ws) || ws[i].Off >= w.End() {
		return out
	}
	if v.starts == nil {
		// An engine layout's footprint is a thousand spans a row (vLLM's
		// paged V: two bytes a head element): summing the windows
		// before each one's would be quadratic in the case.
		v.starts = make([]int, len(ws))
		for j := 1; j < len(ws); j++ {
			v.starts[j] = v.starts[j-1] + ws[j-1].Len
		}
	}
	start := v.starts[i]
	for ; i < len(ws) && ws[i].Off < w.End(); i++ {
		lo, hi := max(ws[i].Off, w.Off), min(ws[i].End(), w.End())
		copy(out[lo-w.Off:hi-w.Off], v.delta.Bytes[start+lo-ws[i].Off:])
		start += ws[i].Len
	}
	return out
}

// seek is the index of the first delta window that ends past off, as a
// binary search over them all finds it, but searched from the last one
// found when off lies beyond it: a row's spans come in order, a few
// windows apart, and an engine layout's row is a thousand spans.
func (v *classifier) seek(off int) int {
	ws := v.delta.Windows
	lo := v.seekAt
	if lo > len(ws) || lo > 0 && ws[lo-1].End() > off {
		lo = 0
	}
	hi := lo + 1
	for step := 1; hi < len(ws) && ws[hi].End() <= off; step *= 2 {
		lo, hi = hi, min(hi+step, len(ws))
	}
	hi = min(hi, len(ws))
	v.seekAt = lo + sort.Search(hi-lo, func(i int) bool { return ws[lo+i].End() > off })
	return v.seekAt
}

// collectValid judges every valid row's footprint (value.go) and returns
// the footprints, sorted.
func (v *classifier) collectValid() []pool.Window {
	sc := v.sc
	covered := make([]pool.Window, 0, sc.Case.Valid*sc.Layout.NumPieces())
	for i := range sc.Case.Valid {
		spans := sc.Layout.Footprint(sc.Case.Loc[i])
		got := make([][]byte, len(spans))
		size := 0
		for _, sp := range spans {
			size += sp.Len
		}
		buf := make([]byte, size) // one allocation a row, not one a span
		at := 0
		for p, sp := range spans {
			w := pool.Window{Off: sp.Off, Len: sp.Len}
			covered = append(covered, w)
			got[p] = v.gotInto(buf[at:at+sp.Len:at+sp.Len], w)
			at += sp.Len
		}
		if sc.Case.Rows[i].Kind == workload.RowNonFinite && sc.Layout.NonFinite() == layout.Contained {
			continue // undefined but contained: the row's own record may hold anything
		}
		// Value judgement: only the bytes the row's recipe rejects are wrong.
		if wrong := v.judgeRow(i, spans, got); len(wrong) > 0 {
			v.wrong = append(v.wrong, wrong...)
			v.untouched[i] = v.untouchedRow(spans, got)
		}
	}
	v.judged.settleEps(sc.Layout)
	sortWindows(covered)
	return covered
}

// collectRest adds changed bytes outside valid footprints: a correct
// kernel changes none. Both lists are sorted, so one merge walk finds them.
func (v *classifier) collectRest(covered []pool.Window) {
	off, c := 0, 0
	for _, w := range v.delta.Windows {
		for a := w.Off; a < w.End(); {
			for c < len(covered) && covered[c].End() <= a {
				c++
			}
			if c < len(covered) && covered[c].Off <= a {
				a = min(covered[c].End(), w.End())
				continue
			}
			hi := w.End()
			if c < len(covered) {
				hi = min(hi, covered[c].Off)
			}
			bg := v.sc.Region.Background(v.sc.Seed, a, hi-a)
			for k := a; k < hi; k++ {
				v.wrong = append(v.wrong, wrongByte{k, v.delta.Bytes[off+k-w.Off], bg[k-a], oracle.NoRow})
			}
			a = hi
		}
		off += w.Len
	}
}

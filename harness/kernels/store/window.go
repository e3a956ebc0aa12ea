package store

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// footprints are the arena windows a run's rows name: every plane of the
// slot of every row it passes the kernel, padded rows included, in the
// run's pool. They are what a run scans: a correct kernel writes inside
// them and nowhere else, and the pad-unaware bugs write the padded rows'
// slots, which are in them too. A write anywhere else is found by the
// proof that follows (ahead.go), not here.
func (t *Target) footprints(r run) []pool.Window {
	base := t.regionOf(r).Pool.Off
	ws := make([]pool.Window, 0, r.c.Capacity()*len(t.Layout.Planes))
	for _, slot := range r.c.Loc {
		for _, sp := range t.Layout.Footprint(slot) {
			ws = append(ws, pool.Window{Off: base + sp.Off, Len: sp.Len})
		}
	}
	return mergeWindows(ws)
}

// mergeWindows sorts ws and joins windows that overlap or touch, as
// arena.WindowScanner wants them: a changed range then never runs from
// one window into the next.
func mergeWindows(ws []pool.Window) []pool.Window {
	slices.SortFunc(ws, func(a, b pool.Window) int { return cmp.Compare(a.Off, b.Off) })
	out := ws[:0]
	for _, w := range ws {
		if n := len(out); n > 0 && w.Off <= out[n-1].End() {
			out[n-1].Len = max(out[n-1].End(), w.End()) - out[n-1].Off
			continue
		}
		out = append(out, w)
	}
	return out
}

// scanner is the target's memory as a window scanner.
func (t *Target) scanner() (arena.WindowScanner, error) {
	s, ok := t.Mem().(arena.WindowScanner)
	if !ok {
		return nil, fmt.Errorf("arena %T cannot scan windows", t.Mem())
	}
	return s, nil
}

// captureAll is oracle.Capture restricted to footprints, for several runs
// at once: what each run changed inside its windows ws[k], as offsets from
// its pool's base, which is Capture's delta when nothing outside them
// changed. One scan covers every run's windows (on a device, one trip for
// a whole flight instead of one per run); its changed ranges are then
// split back by run. Runs' footprints are disjoint (each run has a pool of
// its own); where two runs' windows touch, the scan joins them and the
// split cuts the changed ranges at the boundary, so every run gets what a
// scan of its own windows would have found.
func captureAll(s arena.WindowScanner, regions []pool.Region, ws [][]pool.Window) ([]oracle.Delta, error) {
	var all []pool.Window
	for _, w := range ws {
		all = append(all, w...)
	}
	changed, b, err := s.ChangedIn(mergeWindows(all))
	if err != nil {
		return nil, err
	}
	at := make([]int, len(changed)+1) // where each changed range's bytes start in b
	for i, c := range changed {
		at[i+1] = at[i] + c.Len
	}
	deltas := make([]oracle.Delta, len(ws))
	for k, run := range ws {
		d := oracle.Delta{Windows: make([]pool.Window, 0, len(run)), Bytes: make([]byte, 0, min(pool.Total(run), len(b)))}
		i := 0
		for _, w := range run {
			for i < len(changed) && changed[i].End() <= w.Off {
				i++
			}
			for j := i; j < len(changed) && changed[j].Off < w.End(); j++ {
				lo, hi := max(changed[j].Off, w.Off), min(changed[j].End(), w.End())
				d.Windows = append(d.Windows, pool.Window{Off: lo - regions[k].Pool.Off, Len: hi - lo})
				d.Bytes = append(d.Bytes, b[at[j]+lo-changed[j].Off:at[j]+hi-changed[j].Off]...)
			}
		}
		deltas[k] = d
	}
	return deltas, nil
}

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

// captureIn is oracle.Capture restricted to ws, arena windows inside
// region r: what the run changed there, as offsets from the pool base. It
// equals Capture's delta when nothing outside ws changed.
func captureIn(s arena.WindowScanner, r pool.Region, ws []pool.Window) (oracle.Delta, error) {
	changed, b, err := s.ChangedIn(ws)
	if err != nil {
		return oracle.Delta{}, err
	}
	d := oracle.Delta{Windows: make([]pool.Window, len(changed)), Bytes: b}
	if d.Bytes == nil {
		d.Bytes = []byte{}
	}
	for i, w := range changed {
		d.Windows[i] = pool.Window{Off: w.Off - r.Pool.Off, Len: w.Len}
	}
	return d, nil
}

package store

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
)

// footprints are the arena windows a run's rows name: every plane of the
// slot of every row it passes the kernel, padded rows included, in the
// run's pool (scanWindows). They are what a run scans: a correct kernel
// writes inside them and nowhere else, and the pad-unaware bugs write the
// padded rows' slots, which are in them too. A write anywhere else is
// found by the proof that follows (ahead.go), not here.
func (t *Target) footprints(r run) []pool.Window {
	return shifted(t.scanWindows(r.c), t.regionOf(r).Pool.Off)
}

// joinGap is the most bytes between two windows of a case's footprints
// that are scanned with them as one window. An engine cache spreads a
// token across its page (vLLM's paged V: two bytes a head element, a
// page row apart), so a case's footprints are hundreds of thousands of
// windows with short gaps between, and each window costs more along the
// way (sorted, checked clean, scanned, split by run) than comparing a
// few hundred bytes does. Scanning the gaps too compares more bytes than
// the footprints, never fewer: a write there is seen by the scan instead
// of by the window's proof.
const joinGap = 256

// scanWindows are the windows a case's runs are scanned over, as offsets
// from the pool base: the footprints of every slot its rows name, sorted,
// merged where they touch and joined where at most joinGap bytes lie
// between.
func (t *Target) scanWindows(c *Case) []pool.Window {
	slots := distinctSlots(c.Loc)
	spans := make([]layout.Span, t.Layout.NumPieces())
	buf := scratch(len(slots) * len(spans))
	defer scratchWindows.Put(buf)
	ws := (*buf)[:0]
	for _, slot := range slots {
		t.Layout.FillFootprint(spans, slot)
		for _, sp := range spans {
			ws = append(ws, pool.Window{Off: sp.Off, Len: sp.Len})
		}
	}
	*buf = ws
	return slices.Clone(joinWindows(mergeWindows(ws)))
}

// scratchWindows holds window slices for scanWindows and the radix sort
// to reuse: an engine cache's case spans hundreds of thousands of windows
// before they are joined into a few, and allocating (and clearing) them
// anew each case cost as much as sorting them.
var scratchWindows sync.Pool

// scratch is a slice of scratchWindows' with room for n windows; Put it
// back when done.
func scratch(n int) *[]pool.Window {
	buf, _ := scratchWindows.Get().(*[]pool.Window)
	if buf == nil {
		buf = new([]pool.Window)
	}
	if cap(*buf) < n {
		*buf = make([]pool.Window, 0, n)
	}
	return buf
}

// shifted is ws moved by base, in a slice of its own.
func shifted(ws []pool.Window, base int) []pool.Window {
	out := make([]pool.Window, len(ws))
	for i, w := range ws {
		out[i] = pool.Window{Off: w.Off + base, Len: w.Len}
	}
	return out
}

// joinWindows joins ws's windows at most joinGap bytes apart, in place.
func joinWindows(ws []pool.Window) []pool.Window { return pool.AppendJoined(ws[:0], ws, joinGap) }

// distinctSlots are loc's slots, each once, in order: padded rows
// pointing at one sink slot name it hundreds of times, and an engine
// layout's slot is a thousand windows.
func distinctSlots(loc []int64) []int64 {
	slots := slices.Clone(loc)
	slices.Sort(slots)
	return slices.Compact(slots)
}

// mergeWindows sorts ws and joins windows that overlap or touch, as
// arena.WindowScanner wants them: a changed range then never runs from
// one window into the next.
func mergeWindows(ws []pool.Window) []pool.Window {
	sortWindows(ws)
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

// radixMin is the length from which sortWindows sorts by radix: an
// engine layout's case is hundreds of thousands of windows (vLLM's paged
// V: a window per head element), where comparisons cost tens of
// milliseconds a case.
const radixMin = 1 << 12

// sortWindows sorts ws by offset. Windows of one offset may come in any
// order: every caller merges or walks them by extent.
func sortWindows(ws []pool.Window) {
	byOff := func(a, b pool.Window) int { return cmp.Compare(a.Off, b.Off) }
	switch {
	case slices.IsSortedFunc(ws, byOff): // a flight's runs come in pool order: their windows usually are
	case len(ws) < radixMin:
		slices.SortFunc(ws, byOff)
	default:
		radixSortWindows(ws)
	}
}

// radixSortWindows is an LSD radix sort of ws by offset, 11 bits a pass,
// over the offsets' span above the least (passes where every window has
// the same digit skipped).
func radixSortWindows(ws []pool.Window) {
	lo, hi := ws[0].Off, ws[0].Off
	for _, w := range ws {
		lo, hi = min(lo, w.Off), max(hi, w.Off)
	}
	const bits = 11
	const buckets = 1 << bits
	buf := scratch(len(ws))
	defer scratchWindows.Put(buf)
	src, dst := ws, (*buf)[:len(ws)]
	var count [buckets]int
	for shift := uint(0); (hi-lo)>>shift > 0; shift += bits {
		clear(count[:])
		for _, w := range src {
			count[(w.Off-lo)>>shift&(buckets-1)]++
		}
		if count[(src[0].Off-lo)>>shift&(buckets-1)] == len(src) {
			continue // one digit for all: the pass keeps the order
		}
		at := 0
		for d, n := range count {
			count[d] = at
			at += n
		}
		for _, w := range src {
			d := (w.Off - lo) >> shift & (buckets - 1)
			dst[count[d]] = w
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ws[0] {
		copy(ws, src)
	}
}

// scanner is the target's memory as a window scanner.
func (t *Target) scanner() (arena.WindowScanner, error) {
	s, ok := t.Mem().(arena.WindowScanner)
	if !ok {
		return nil, fmt.Errorf("arena %T cannot scan windows", t.Mem())
	}
	return s, nil
}

// mergedAll is every run's windows in one list, as a scan of them all
// wants it (mergeWindows).
func mergedAll(ws [][]pool.Window) []pool.Window {
	var all []pool.Window
	for _, w := range ws {
		all = append(all, w...)
	}
	return mergeWindows(all)
}

// captureAll is oracle.Capture restricted to footprints, for several runs
// at once: what each run changed inside its windows ws[k], as offsets from
// its pool's base, which is Capture's delta when nothing outside them
// changed; and every changed range, as arena offsets, for the restore.
// One scan covers every run's windows (on a device, one trip for a whole
// flight instead of one per run); its changed ranges are then split back
// by run. Runs' footprints are disjoint (each run has a pool of its own);
// where two runs' windows touch, the scan joins them and the split cuts
// the changed ranges at the boundary, so every run gets what a scan of its
// own windows would have found.
func captureAll(s arena.WindowScanner, regions []pool.Region, ws [][]pool.Window) (deltas []oracle.Delta, changed []pool.Window, err error) {
	changed, b, err := s.ChangedIn(mergedAll(ws))
	if err != nil {
		return nil, nil, err
	}
	at := make([]int, len(changed)+1) // where each changed range's bytes start in b
	for i, c := range changed {
		at[i+1] = at[i] + c.Len
	}
	deltas = make([]oracle.Delta, len(ws))
	for k, run := range ws {
		if d, ok := poolDelta(run, regions[k].Pool, changed, at, b); ok {
			deltas[k] = d
			continue
		}
		deltas[k] = splitRun(run, regions[k].Pool.Off, changed, at, b)
	}
	return deltas, changed, nil
}

// poolDelta is the delta of a run whose windows lie in its pool p, as a
// flight's runs' do (each run has a pool of its own): the scan's changed
// ranges inside p, found by binary search, with their stretch of b, when
// none of them crosses p's edges. ok is false otherwise, for splitRun.
func poolDelta(run []pool.Window, p pool.Window, changed []pool.Window, at []int, b []byte) (d oracle.Delta, ok bool) {
	if len(run) == 0 || run[0].Off < p.Off || run[len(run)-1].End() > p.End() {
		return d, false
	}
	j0, _ := slices.BinarySearchFunc(changed, p.Off, func(c pool.Window, off int) int { return cmp.Compare(c.End(), off+1) })
	j1, _ := slices.BinarySearchFunc(changed, p.End(), func(c pool.Window, end int) int { return cmp.Compare(c.Off, end) })
	if j0 < j1 && (changed[j0].Off < p.Off || changed[j1-1].End() > p.End()) {
		return d, false
	}
	d.Windows = make([]pool.Window, j1-j0)
	for i, c := range changed[j0:j1] {
		d.Windows[i] = pool.Window{Off: c.Off - p.Off, Len: c.Len}
	}
	d.Bytes = b[at[j0]:at[j1]:at[j1]]
	return d, true
}

// splitRun is the delta of one run whose windows are run, out of a scan's
// changed ranges (changed, their bytes b from at[j]), as offsets from
// base: each changed range cut to each of the run's windows, its bytes
// copied.
func splitRun(run []pool.Window, base int, changed []pool.Window, at []int, b []byte) oracle.Delta {
	d := oracle.Delta{Windows: make([]pool.Window, 0, len(run)), Bytes: []byte{}}
	i := 0
	for _, w := range run {
		for i < len(changed) && changed[i].End() <= w.Off {
			i++
		}
		for j := i; j < len(changed) && changed[j].Off < w.End(); j++ {
			lo, hi := max(changed[j].Off, w.Off), min(changed[j].End(), w.End())
			d.Windows = append(d.Windows, pool.Window{Off: lo - base, Len: hi - lo})
			d.Bytes = append(d.Bytes, b[at[j]+lo-changed[j].Off:at[j]+hi-changed[j].Off]...)
		}
	}
	return d
}

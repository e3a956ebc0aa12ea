package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
)

// Checking ahead. An exact check (Target.Check) is a round trip for one
// case and a scan of every byte of its three pools: on a 4096-slot pool
// that is 3 MiB compared per case, and the scan and the trip are most of
// the time. A property run, though, draws its cases long before it needs
// the verdict of any but the first: nothing but the generator uses its
// random source, so the cases it will ask about next are known. The
// target checks them ahead, in windows of consecutive cases:
//
//   - Each case runs on a pool set of its own, several cases per round
//     trip, and while the plugin runs one batch the harness stages the
//     next and scans the last: both cores work.
//   - A run is scanned only where its rows point (footprints), not over
//     the pool. That delta is the exact one if nothing else changed, and
//     the window proves that: before a run its footprints must hold the
//     baseline (so no earlier case's stray write hides under a correct
//     one and is put back with it), and after the window every byte of
//     every pool it used must hold the baseline again (so nothing was
//     written outside the footprints: the full scan, once per window
//     instead of once per run). The proof reads the memory itself; the
//     plugin cannot tell the harness what it wrote, so it cannot get a
//     write past it.
//   - A window whose proof fails, whose round trip fails, or that is
//     stopped midway is tainted: none of its verdicts is used, and the
//     runner's questions about its cases get exact checks, one at a time,
//     in order. Faults and violations are so reported against the case an
//     exact run would have stopped at; a plugin that crashed or hung in a
//     tainted window is restarted before those checks, since that case may
//     come after the one being asked about.
//
// Verdicts handed out are thus those of exact checks, byte for byte; the
// only difference a plugin can see is that it runs cases the runner never
// asks about (after a failure, or past the run's end within a window).
type ahead struct {
	owner   any         // the System whose windows run now
	last    *window     // the last window started; the next one waits for it
	stopped atomic.Bool // set while Stop waits: running windows taint themselves
	// idle is the fault of a plugin process that died of no case's doing
	// (killed from outside, or dead between calls) while a window ran: the
	// exact checks that replace the window pass in the restarted process,
	// so the fault is handed to the next Check, to be reported, never
	// passed over by the restart.
	idle atomic.Pointer[plugin.Fault]

	answered, tainted atomic.Int64 // verdicts handed out; windows tainted
}

// AheadCounts reports how many verdicts checking ahead has handed out and
// how many windows were tainted (their cases then checked exactly): on a
// correct kernel that nothing stops, none should be.
func (t *Target) AheadCounts() (answered, tainted int) {
	if t.ahead == nil {
		return 0, 0
	}
	return int(t.ahead.answered.Load()), int(t.ahead.tainted.Load())
}

// window is consecutive drawn cases checked ahead.
type window struct {
	cases   []*Case
	sets    []int // the set each case ran on
	results []*Result
	tainted bool          // the verdicts may not be used: check the cases exactly
	started bool          //
	ready   chan struct{} // closed when results and tainted are final
}

func newWindow(cases []*Case) *window {
	return &window{cases: cases, sets: make([]int, len(cases)), results: make([]*Result, len(cases)), ready: make(chan struct{})}
}

// Sizes of checking ahead.
const (
	maxSets     = 8         // pool sets kept for checking ahead, at most
	firstWindow = 8         // cases in a System's first window; each next one doubles
	maxWindow   = 1024      // cases in a window, at most, unless the proof needs more
	hostShare   = 256 << 10 // proof bytes a case may cost on the host (a scan by the CPU)
	devShare    = 16 << 20  // and on a device, which scans a hundred times faster
	maxBatch    = 4         // cases per round trip, at most
	setBudget   = 256       // MiB of host pools a target may keep for checking ahead
	// pairBudget is the MiB two sets may take where fewer than two fit
	// setBudget: an engine cache of 16 heads of 256 at page size 256 is
	// 204 MiB a set, and without sets to check ahead on every case of it
	// would be checked exactly, a scan of its whole set each.
	pairBudget = 512
)

// deviceBudget is how many bytes of device pools a target may keep for
// checking ahead on a GPU of total bytes: an eighth of it (check runs four
// jobs at once on the GPU, each a target), from 2 to 16 GiB. On an H200,
// 16 GiB holds eight sets of three 1 Mi-slot bf16 pools: four cases per
// round trip.
func deviceBudget(total int64) int {
	return int(min(max(total/8, 2<<30), 16<<30))
}

// AutoSets in Config.Sets asks for as many pool sets as the backend
// affords (setsFor).
const AutoSets = -1

// setsFor is how many pool sets a target of slots slots of l keeps for
// checking ahead on backend b: as many as fit a budget of memory (the
// host's is small: pools there are scanned by the CPU), at most maxSets,
// two where two fit pairBudget though fewer fit the budget, and none
// when fewer than two fit (checking ahead alternates two halves).
func setsFor(l *layout.Layout, slots int, b arena.Backend) int {
	budget := setBudget << 20
	if c, ok := b.(arena.CUDA); ok {
		budget = deviceBudget(c.Dev.TotalMem())
	}
	set := numPools * liveBytes(l, slots)
	most := maxSets
	if l.PoolBytes(slots) > denseMax {
		// A pool checked in windows reaches far in address space: the
		// arena's bound (pool.MaxArenaBytes) holds five sets of pools
		// past 4 GiB, not nine.
		most = min(most, int(pool.MaxArenaBytes/(numPools*int64(l.PoolBytes(slots))+1))-1)
	}
	n := min(most, budget/max(set, 1)) &^ 1
	if n < 2 && most >= 2 && 2*set <= pairBudget<<20 {
		n = 2
	}
	if n < 2 {
		return 0
	}
	return n
}

// windows returns the first window's size and the largest. Each window
// ends with a proof, a scan of every set it used, so a window is as long
// as it takes to keep that scan to a share of bytes per case; the first
// is no longer than that (a case failing early wastes the rest of it),
// and each next one doubles.
func (t *Target) windows() (first, most int) {
	set, share := numPools*liveBytes(t.Layout, t.Slots), hostShare
	if t.Backend.Place().OnDevice() {
		share = devShare
	}
	most = max(maxWindow, t.Sets*set/share)
	first = min(most, max(firstWindow, 2*set/share)) // the first window proves two sets
	return first, most
}

// canAhead reports whether the target keeps sets to check ahead on. A
// plugin under a sanitizer is checked a case at a time: its findings
// belong to the case that just ran, which only an exact check knows.
func (t *Target) canAhead() bool { return t.Sets >= 2 && !t.Plugin.Sanitized() }

// startAhead queues w behind the windows already started for owner;
// another owner's windows are stopped first (a suite's next row reuses the
// target).
func (t *Target) startAhead(ctx context.Context, owner any, w *window) {
	if t.ahead == nil {
		t.ahead = &ahead{}
	}
	a := t.ahead
	if a.owner != owner {
		t.stopAhead(ctx)
		a.owner = owner
	}
	prev := a.last
	a.last, w.started = w, true
	go func() {
		if prev != nil {
			<-prev.ready
		}
		t.runWindow(ctx, w)
		if w.tainted {
			a.tainted.Add(1)
		}
		close(w.ready)
	}()
}

// stopAhead waits for the windows started so far; those still running
// stop at their next batch and are tainted. The target is then idle, its
// sets clean.
func (t *Target) stopAhead(ctx context.Context) {
	a := t.ahead
	if a == nil || a.last == nil {
		return
	}
	a.stopped.Store(true)
	<-a.last.ready
	a.stopped.Store(false)
	a.last = nil
}

// flight is one round trip of a window: its cases, each on a set of its
// own, and their runs.
type flight struct {
	idx     []int     // the window's index of each case
	oracles []*Oracle // per case
	runs    []run     // every case's runs, in request order
	first   []int     // index in runs of each case's first run, and len(runs)
	ws      [][]pool.Window
	done    chan struct{}
	err     error
}

// runWindow checks w's cases in round trips of up to maxBatch cases, on
// two halves of the sets in turn, then proves the sets clean. On any
// doubt it taints w and leaves the sets clean and the plugin running.
//
// Three goroutines share the work, so that the harness keeps the core
// the plugin leaves idle busy too: one draws rows and encodes them for
// the oracles (prepareAll), this one stages, scans and restores, and one
// classifies (classifyAll).
func (t *Target) runWindow(ctx context.Context, w *window) {
	if t.ahead.stopped.Load() || t.group.ensure(ctx) != nil {
		w.tainted = true
		return
	}
	quit := make(chan struct{})
	oracles := t.prepareAll(w, quit)
	verdicts, judged := t.classifyAll(w)
	defer func() {
		close(quit)
		close(verdicts)
		<-judged
	}()
	per := min(maxBatch, t.Sets/2, max(1, len(w.cases)/8))
	used := min(t.Sets, 2*per)
	var prev *flight
	for lo, half := 0, 0; lo < len(w.cases); lo, half = lo+per, 1-half {
		if t.ahead.stopped.Load() {
			w.tainted = true
			break
		}
		cur, err := t.stageFlight(w, oracles, lo, min(lo+per, len(w.cases)), 1+half*per)
		if err != nil {
			w.tainted = true
		}
		if prev != nil && !t.wait(ctx, w, prev) {
			prev = nil
		}
		if w.tainted {
			break
		}
		t.send(ctx, cur)
		if prev != nil {
			t.judge(w, prev, verdicts) // while the plugin runs cur
		}
		prev = cur
	}
	if prev != nil && t.wait(ctx, w, prev) {
		t.judge(w, prev, verdicts)
	}
	start := time.Now()
	if t.proveClean(used) != nil {
		w.tainted = true
	}
	t.clock("proof", start)
}

// prepareAll builds the oracles of w's cases, in order, until quit.
func (t *Target) prepareAll(w *window, quit <-chan struct{}) <-chan *Oracle {
	out := make(chan *Oracle, 2*maxBatch)
	go func() {
		defer close(out)
		for _, c := range w.cases {
			start := time.Now()
			o := t.newOracle(c)
			t.clock("prepare", start)
			select {
			case out <- o:
			case <-quit:
				return
			}
		}
	}()
	return out
}

// judged is a flight's cases ready for their verdicts.
type judged struct {
	f       *flight
	deltas  []oracle.Delta
	staging [][]oracle.Violation // per case: what its runs wrote into its inputs
}

// classifyAll classifies judged flights into w's results until the
// returned channel is closed; done closes when it has finished.
func (t *Target) classifyAll(w *window) (chan<- judged, <-chan struct{}) {
	in := make(chan judged, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for j := range in {
			start := time.Now()
			for k, o := range j.f.oracles {
				w.results[j.f.idx[k]] = t.verdict(o, j.deltas[j.f.first[k]:j.f.first[k+1]], j.staging[k])
			}
			t.clock("classify", start)
		}
	}()
	return in, done
}

// stageFlight prepares cases [lo, hi) of w, whose oracles come from
// oracles in order, on the sets from set on: their staged inputs and
// footprints, each run's footprints checked to hold the baseline.
func (t *Target) stageFlight(w *window, oracles <-chan *Oracle, lo, hi, set int) (*flight, error) {
	start := time.Now()
	f := &flight{done: make(chan struct{})}
	for i := lo; i < hi; i++ {
		c := w.cases[i]
		if c.Capacity() > t.MaxCapacity {
			return nil, fmt.Errorf("case capacity %d exceeds the staging size %d", c.Capacity(), t.MaxCapacity)
		}
		f.idx = append(f.idx, i)
		f.oracles = append(f.oracles, <-oracles)
		f.first = append(f.first, len(f.runs))
		w.sets[i] = set + i - lo
		f.runs = append(f.runs, runsOf(w.sets[i], c)...)
	}
	f.first = append(f.first, len(f.runs))
	start = t.clock("wait-prepare", start)
	// A case's runs are scanned over its windows, computed once: the
	// repeat's are the case's, and the unpadded run's own are among them
	// (the padded rows' slots, which it must leave alone as well, are the
	// rest).
	for k, o := range f.oracles {
		rel := t.scanWindows(o.Case)
		for _, r := range f.runs[f.first[k]:f.first[k+1]] {
			f.ws = append(f.ws, shifted(rel, t.regionOf(r).Pool.Off))
		}
	}
	// No t.batch here or in judge: on a GPU a batch holds the arena's
	// device thread through the host work between its copies (staging
	// rows, cutting windows, decoding what a scan found), where the
	// pipeline's next flight would take it for its own copies; each call
	// takes it only for its copies and launches.
	if err := t.noteBlocks(); err != nil {
		return f, err
	}
	for k, o := range f.oracles {
		if err := t.stage(f.runs[f.first[k]].set, o.Case, o.Rows()); err != nil {
			return f, err
		}
	}
	start = t.clock("stage", start)
	defer t.clock("precheck", start)
	return f, t.clean(f.ws)
}

// errDirty marks footprints that did not hold the baseline before a run.
var errDirty = fmt.Errorf("footprints changed before their run")

// clean checks that every run's footprints hold the baseline, by one
// scan of them all.
func (t *Target) clean(ws [][]pool.Window) error {
	s, err := t.scanner()
	if err != nil {
		return err
	}
	changed, _, err := s.ChangedIn(mergedAll(ws))
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		return errDirty
	}
	return nil
}

// send starts f's round trip.
func (t *Target) send(ctx context.Context, f *flight) {
	reqs := t.requests(f.runs)
	go func() {
		defer close(f.done)
		var h time.Duration
		h, f.err = t.group.storeBatch(ctx, reqs)
		if h > 0 {
			t.addPhase("store-plugin", h)
		}
	}()
}

// wait waits for f's round trip; a failed one taints w (and restarts a
// plugin that died or hung, since its next exact check may be of an
// earlier case than the one that killed it). It reports success.
func (t *Target) wait(ctx context.Context, w *window, f *flight) bool {
	start := time.Now()
	<-f.done
	t.clock("wait", start)
	if f.err == nil {
		return true
	}
	w.tainted = true
	if flt, ok := plugin.AsFault(f.err); ok && (flt.Kind == plugin.Crash || flt.Kind == plugin.Hang) {
		if flt.Kind == plugin.Crash && !flt.InKernel() {
			t.ahead.idle.CompareAndSwap(nil, flt)
		}
		t.Plugin.Restart(ctx) // a failed restart shows at the next exact check
	}
	return false
}

// idleFault returns, once, the fault of a process that died of no case's
// doing while a window ran (see ahead.idle).
func (t *Target) idleFault() error {
	if t.ahead == nil {
		return nil
	}
	if f := t.ahead.idle.Swap(nil); f != nil {
		return f
	}
	return nil
}

// judge scans and restores the footprints of f's runs and hands its
// deltas to the classifier; anything amiss taints w.
func (t *Target) judge(w *window, f *flight, verdicts chan<- judged) {
	deltas, staging, err := t.captureFlight(f)
	if err != nil {
		w.tainted = true
		return
	}
	verdicts <- judged{f, deltas, staging}
}

// captureFlight reads back what f's runs did: each case's staged inputs
// and each run's delta in its footprints, which it then restores. No
// t.batch: see stageFlight.
func (t *Target) captureFlight(f *flight) (deltas []oracle.Delta, staging [][]oracle.Violation, err error) {
	start := time.Now()
	staging = make([][]oracle.Violation, len(f.oracles))
	for k := range f.oracles {
		if staging[k], err = t.checkStaging(f.runs[f.first[k]].set); err != nil {
			return nil, nil, err
		}
	}
	s, err := t.scanner()
	if err != nil {
		return nil, nil, err
	}
	regions := make([]pool.Region, len(f.runs))
	for k, r := range f.runs {
		regions[k] = t.regionOf(r)
	}
	deltas, changed, err := captureAll(s, regions, f.ws)
	if err != nil {
		return nil, nil, err
	}
	start = t.clock("capture", start)
	defer t.clock("restore", start)
	if err := t.Mem().Reset(changed); err != nil {
		return nil, nil, err
	}
	return deltas, staging, t.sameBlocks()
}

// proveClean scans every pool of sets 1..n in full and puts back what
// differs from the baseline; it fails when anything did, or when a hole
// of a lazy target's exact set was written.
func (t *Target) proveClean(n int) error {
	return t.batch(func() error {
		if err := t.sameBlocks(); err != nil {
			return err
		}
		var dirty []pool.Window
		for set := 1; set <= n; set++ {
			for p := range numPools {
				ws, err := t.Mem().Changed(t.regionOf(run{set: set, pool: p}).Span())
				if err != nil {
					return err
				}
				dirty = append(dirty, ws...)
			}
		}
		if len(dirty) == 0 {
			return nil
		}
		if err := t.Mem().Reset(dirty); err != nil {
			return err
		}
		return errDirty
	})
}

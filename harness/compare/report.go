package compare

import (
	"strings"

	"golang.org/x/perf/benchmath"
)

// A Side is one file's values of a row (one per run), summarised.
type Side struct {
	benchmath.Summary     // median of the runs and its confidence interval
	N                 int // runs; 0 if the row is missing here
}

// A Row is one unit of one cell in both files: evidence.
type Row struct {
	Unit     string  // tidied: sec/op, p50-sec/op, p99-sec/op, GB/s...
	Better   int     // -1 lower is better, +1 higher, 0 unknown
	Old, New Side    // base and new
	DeltaPct float64 // (new - old) / old × 100, of the medians over runs
	P        float64 // U-test p-value over runs; 1 when not tested
}

// A Cell is the comparison of one benchmark: one verdict, judged on one
// unit, with every unit as evidence.
type Cell struct {
	Name    string // full benchmark name, without "Benchmark" (and without a -N GOMAXPROCS suffix)
	Verdict Verdict
	Why     string // the change that decided, in a line
	// Lacks says what data the cell lacks to be judged (too few runs on
	// a side, no time unit); empty when it had enough.
	Lacks string
	Row   // the deciding unit
	// Ref is the floor the change was judged against (see drift),
	// RefDeltaPct its change, NetDeltaPct the change net of it; Ref is
	// empty when the cell was judged on DeltaPct alone.
	Ref                      string
	RefDeltaPct, NetDeltaPct float64
	Evidence                 []Row // every unit either file has, in file order
}

// Fields are the key=value parts of c's name, by key.
func (c *Cell) Fields() map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(c.Name, "/")[1:] {
		if k, v, ok := strings.Cut(part, "="); ok {
			out[k] = v
		}
	}
	return out
}

// Kind is the benchmark's base name: Store, Copy, Empty.
func (c *Cell) Kind() string { kind, _, _ := strings.Cut(c.Name, "/"); return kind }

// A Report is the comparison of two benchmark files, a cell at a time.
type Report struct {
	Base, New string // file names
	Rerun     string // the file Confirm checked slower cells against; "" if none
	Options   Options
	Cells     []Cell               // in order of first appearance
	Warnings  []error              // about the files as a whole, such as another driver
	Config    [2]map[string]string // each file's config keys with one value in it: base, new
}

// Count returns how many cells have verdict v.
func (r *Report) Count(v Verdict) int {
	n := 0
	for _, c := range r.Cells {
		if c.Verdict == v {
			n++
		}
	}
	return n
}

// Slower returns the cells judged slower: a nightly job fails on any.
func (r *Report) Slower() []Cell { return r.with(func(c Cell) bool { return c.Verdict == Slower }) }

// Lacking returns the cells that lack the data to be judged, and the
// cells of the base that the new file does not have: a nightly gate
// (--strict) fails on any, since passing them would pass what was never
// measured.
func (r *Report) Lacking() []Cell {
	return r.with(func(c Cell) bool { return c.Lacks != "" || c.Verdict == Missing && c.Old.N > 0 })
}

// Compared counts the cells both files hold: what the comparison judged.
func (r *Report) Compared() int {
	return len(r.with(func(c Cell) bool { return c.Verdict != Missing }))
}

func (r *Report) with(keep func(Cell) bool) []Cell {
	var out []Cell
	for _, c := range r.Cells {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// Confirm keeps a slower cell only where rerun, the same base compared with
// a second run of the new code, finds it slower too; the others become
// Unsure (with no lack of data: they are not a gate's error). On a shared
// machine one cell of a night can land on a slow stretch (the host busy
// through a cell, a plugin process whose launches settle 0.2 µs slower):
// a change in the code repeats on a rerun, such a stretch does not.
func (r *Report) Confirm(rerun *Report) {
	again := map[string]Cell{}
	for _, c := range rerun.Cells {
		again[c.Name] = c
	}
	for i, c := range r.Cells {
		if c.Verdict != Slower {
			continue
		}
		if a, ok := again[c.Name]; !ok || a.Verdict != Slower {
			r.Cells[i].Verdict = Unsure
			r.Cells[i].Why = c.Why + "; not slower in the rerun (" + rerunText(a, ok) + ")"
		}
	}
	r.Rerun = rerun.New
}

func rerunText(c Cell, ok bool) string {
	if !ok {
		return "not in it"
	}
	return string(c.Verdict) + ", " + c.Why
}

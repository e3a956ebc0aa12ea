package compare

import "golang.org/x/perf/benchmath"

// A Side is one file's values for a row, summarised.
type Side struct {
	benchmath.Summary     // median and its confidence interval
	N                 int // number of values; 0 if the row is missing here
}

// A Row compares one benchmark in one unit between the two files.
type Row struct {
	Name     string  // full benchmark name, without "Benchmark"
	Unit     string  // tidied unit: sec/op, p99-sec/op, GB/s, tokens/s...
	Better   int     // -1 lower is better, +1 higher is better, 0 unknown
	Old, New Side    // base and new
	DeltaPct float64 // (new - old) / old × 100, of the medians
	// Ref is the floor row the change was judged against (see drift),
	// RefDeltaPct its change, NetDeltaPct the change net of it; Ref is
	// empty when the row was judged on DeltaPct alone.
	Ref                      string
	RefDeltaPct, NetDeltaPct float64
	P                        float64 // U-test p-value; 1 when not tested
	Verdict                  Verdict
	Warnings                 []error // statistical caveats: show as footnotes
}

// A Report is the comparison of two benchmark files.
type Report struct {
	Base, New string // file names
	Rerun     string // the file Confirm checked regressions against; "" if none
	Options   Options
	Rows      []Row   // grouped by unit, in order of first appearance
	Warnings  []error // about the files as a whole, such as a different gpu
}

// Regressions returns the rows whose verdict is Regression. A nightly
// job should exit non-zero when there are any.
func (r *Report) Regressions() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict == Regression {
			out = append(out, row)
		}
	}
	return out
}

// Compared counts the rows both files hold: what the comparison judged.
func (r *Report) Compared() int {
	n := 0
	for _, row := range r.Rows {
		if row.Old.N > 0 && row.New.N > 0 {
			n++
		}
	}
	return n
}

// Count returns how many rows have verdict v.
func (r *Report) Count(v Verdict) int {
	n := 0
	for _, row := range r.Rows {
		if row.Verdict == v {
			n++
		}
	}
	return n
}

// Confirm keeps a regression only where rerun, the same base compared with
// a second run of the new code, shows it too; the others become
// Unconfirmed. On a shared machine one cell of a night can land on a slow
// stretch (the host busy through a per-launch cell, a plugin process whose
// launches settle 0.2 µs slower): a change in the code repeats on a rerun,
// such a stretch does not.
func (r *Report) Confirm(rerun *Report) {
	again := map[[2]string]bool{}
	for _, row := range rerun.Regressions() {
		again[[2]string{row.Name, row.Unit}] = true
	}
	for i, row := range r.Rows {
		if row.Verdict == Regression && !again[[2]string{row.Name, row.Unit}] {
			r.Rows[i].Verdict = Unconfirmed
		}
	}
	r.Rerun = rerun.New
}

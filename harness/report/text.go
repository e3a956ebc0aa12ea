package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/workload"
)

// WriteText prints a run as people read it: the table, the first failure
// in full, and a replay line for each other failure.
func WriteText(w io.Writer, r *Run) {
	WriteTable(w, r)
	for i, f := range r.Failures() {
		if i == 0 {
			fmt.Fprintln(w)
			WriteFailure(w, f)
			continue
		}
		if i == 1 {
			fmt.Fprintln(w, "\nother failures:")
		}
		if f.ReproPath == "" {
			fmt.Fprintf(w, "  %s %s: no repro file (%s)\n", r.rowName(f), f.Property, unsaved(f))
			continue
		}
		fmt.Fprintf(w, "  %s %s: %s\n", r.rowName(f), f.Property, f.Replay())
	}
}

// rowName names the row a failure came from by its key columns.
func (r *Run) rowName(f *Failure) string {
	for _, row := range r.Rows {
		if row.Failure == f {
			return strings.Join(r.keyValues(row), "/")
		}
	}
	return ""
}

func (r *Run) keyValues(row Row) []string {
	var out []string
	for _, k := range r.keys {
		switch k {
		case LayoutKey:
			out = append(out, row.Layout.Name)
		case ShapeKey:
			out = append(out, shapeOf(row))
		default:
			out = append(out, row.Label)
		}
	}
	return out
}

// shapeOf is a row layout's head dim and page size, as D=120 P=16, its
// heads first when several (H=3 D=128 P=16).
func shapeOf(row Row) string {
	if row.Layout == nil {
		return ""
	}
	x := workload.Shape{HeadDim: row.Layout.HeadDim, PageSize: row.Layout.PageSize}
	if h := row.Layout.NumHeads(); h > 1 {
		x.Heads = h
	}
	return x.String()
}

func (r *Run) keyHeads() []string {
	var out []string
	for _, k := range r.keys {
		switch k {
		case LayoutKey:
			out = append(out, "layout")
		case ShapeKey:
			out = append(out, "shape")
		default:
			out = append(out, r.label)
		}
	}
	return out
}

// WriteTable prints the title, then a row per verdict and a column per
// property: ok, FAIL, FLAKY, or FAULT when the plugin broke.
func WriteTable(w io.Writer, r *Run) {
	fmt.Fprintf(w, "%s\n", r.Title)
	for _, l := range r.Header.Coverage {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tcases", strings.Join(r.keyHeads(), "\t"))
	for _, p := range r.cols {
		fmt.Fprintf(tw, "\t%s", p)
	}
	fmt.Fprintln(tw, "\tfaults")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%d", strings.Join(r.keyValues(row), "\t"), row.Cases)
		for _, c := range row.Cells {
			fmt.Fprintf(tw, "\t%s", c)
		}
		fmt.Fprintf(tw, "\t%d\n", len(row.Faults))
	}
	tw.Flush()
}

// WriteFailure prints a failure: its headline, how it was found, the
// minimal case as the kind prints it, and how to replay it.
func WriteFailure(w io.Writer, f *Failure) {
	status := Fail
	if f.Flaky {
		status = Flaky
	}
	fmt.Fprintf(w, "%s %s%s · %s · property %s\n", status, f.Plugin, variantSuffix(f.Variant), strings.Join(f.Headline, " · "), f.Property)
	switch {
	case f.Replays > 0:
		fmt.Fprintf(w, "  replayed case failed %d of %d runs:\n", f.ReplayFails, f.Replays)
	case f.Flaky && f.Replayed:
		fmt.Fprintf(w, "  replayed case failed once, then passed when re-run:\n")
	case f.Flaky && f.Rerun < 0:
		fmt.Fprintf(w, "  case %d of seed %d failed once; the plugin faulted when it was re-run; not shrunk\n", f.CaseIndex, f.Seed)
	case f.Flaky && f.Reruns > 1:
		fmt.Fprintf(w, "  case %d of seed %d failed once, then passed %d re-runs; not shrunk\n", f.CaseIndex, f.Seed, f.Reruns)
	case f.Flaky:
		fmt.Fprintf(w, "  case %d of seed %d failed once, then passed when re-run; not shrunk\n", f.CaseIndex, f.Seed)
	case f.Replayed:
		fmt.Fprintf(w, "  replayed case, confirmed by a re-run:\n")
	case f.Race && f.RaceShrunk:
		fmt.Fprintf(w, "  found at case %d of seed %d: a race, %s in one call, the wrong write last in %d of %d runs;\n"+
			"  shrunk in %d steps (each candidate given %d checks) to a case that shows the bug without a race:\n",
			f.CaseIndex, f.Seed, f.RaceNote, f.RaceHits, f.RaceRuns, f.Shrinks, property.RaceRuns)
	case f.Race:
		fmt.Fprintf(w, "  found at case %d of seed %d: a race, two writers of one slot in one call; shrunk in %d steps (each candidate given %d checks) to:\n",
			f.CaseIndex, f.Seed, f.Shrinks, property.RaceRuns)
	case f.Reruns > 1:
		passed := "re-run 1 passed"
		if f.Reruns > 2 {
			passed = fmt.Sprintf("re-runs 1-%d passed", f.Reruns-1)
		}
		fmt.Fprintf(w, "  found at case %d of seed %d, failed again on re-run %d (%s: it fails only some runs, as a race does), shrunk in %d steps to:\n",
			f.CaseIndex, f.Seed, f.Reruns, passed, f.Shrinks)
	case f.ShrinkCut:
		fmt.Fprintf(w, "  found at case %d of seed %d, confirmed by a re-run, shrunk in %d steps (then stopped: %d candidates checked; it may shrink further) to:\n",
			f.CaseIndex, f.Seed, f.Shrinks, property.DefaultShrinkChecks)
	default:
		fmt.Fprintf(w, "  found at case %d of seed %d, confirmed by a re-run, shrunk in %d steps to:\n", f.CaseIndex, f.Seed, f.Shrinks)
	}
	f.write(w)
	if f.Race && !f.RaceShrunk {
		fmt.Fprintf(w, "  race: the wrong write landed last in %d of %d runs of this case; the kernel writes the slot twice in every\n"+
			"  run, and which write lands last is left to chance: a bug whether or not a run shows it\n", f.RaceHits, f.RaceRuns)
	}
	if f.NeedsHistory {
		fmt.Fprintf(w, "  NEEDS THE PLUGIN'S HISTORY: this case failed in the plugin process that had run the search and passed\n"+
			"  in a fresh one: the kernel keeps state across calls (a cache, a buffer) that the case alone does not set up\n")
	}
	if f.Flaky {
		if f.Rerun >= 0 {
			fmt.Fprintf(w, "  re-run: %d violations\n", f.Rerun)
		} else {
			fmt.Fprintf(w, "  re-run: the plugin faulted (see the fault below)\n")
		}
	}
	if f.ReplayPlugin != "" && f.ReproPath != "" {
		fmt.Fprintf(w, "  replay: %s   # --plugin named: a repro file alone runs no command\n", f.Replay())
	} else if f.ReproPath != "" {
		fmt.Fprintf(w, "  replay: %s\n", f.Replay())
	} else if f.ReproErr != nil {
		fmt.Fprintf(w, "  replay: no repro file (%s)\n", unsaved(f))
	}
	if f.Test != "" {
		fmt.Fprintf(w, "  test:   %s\n", f.Test)
	}
}

// unsaved says why a failure has no repro file.
func unsaved(f *Failure) string {
	if f.ReproErr == nil {
		return "not saved"
	}
	return "not saved: " + textsafe.String(f.ReproErr.Error())
}

func variantSuffix(v string) string {
	if v == "" {
		return ""
	}
	return " --variant " + v
}

package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/workload"
)

// Cell statuses of a verdict table.
const (
	OK    = "ok"
	Fail  = "FAIL"
	Flaky = "FLAKY"
	Fault = "FAULT" // the plugin broke: the row's properties are unjudged
	// Stopped marks a row the run was interrupted in: unjudged, and no
	// fault of the plugin's.
	Stopped = "stopped"
)

// Result is a checked case as reports read it.
type Result interface {
	property.Result
	// NumViolations counts the case's violations.
	NumViolations() int
}

// Key is a column that names a row.
type Key int

// The key columns.
const (
	LayoutKey Key = iota // the row's layout
	LabelKey             // the row's label: a padding convention, a profile
	ShapeKey             // the row layout's head dim and page size, when rows draw them
)

// Schema is how one kernel kind's check runs read: its table, its failure
// headline, its checked cases in text and in JSON, and the repro files its
// failures save. C and R are the kind's case and result types.
type Schema[C workload.Case, R Result] struct {
	Kernel protocol.Kernel
	// Keys are the table's columns before "cases".
	Keys []Key
	// Columns are the property columns, in order.
	Columns []oracle.Kind
	// Extra are property columns shown only in a run where some row
	// violated them (a crash, a sanitizer's finding): a table of runs
	// that never crash reads as before.
	Extra []oracle.Kind
	// Counts lets violation kinds count against another column (missing
	// against value).
	Counts map[oracle.Kind]oracle.Kind
	// LabelJSON is a JSON verdict's key for the label; JSONLayout says
	// whether a JSON verdict names its layout.
	LabelJSON  string
	JSONLayout bool
	// Title is the line above the table.
	Title func(h Header) string
	// Headline names a failing row between the plugin and its property:
	// for a store, its layout and "padding count".
	Headline func(layout *layout.Layout, label string) []string
	// WriteCase prints a checked case: the case, its violations and what
	// else the kind shows (a page map, descriptors).
	WriteCase func(w io.Writer, l *layout.Layout, c C, r R)
	// FailureJSON is what a JSON failure carries between shrinks and repro:
	// the case and its violations, and the kind's extras.
	FailureJSON func(c C, r R) Object
	// Repro is the repro file of a failing row.
	Repro func(h Header, v property.Verdict[C, R]) (*Repro, error)
}

// Header describes a check run above its table and in its JSON.
type Header struct {
	Plugin, Version, Variant  string
	PluginArg                 string // how --plugin named it: what a repro file runs again
	Cases, Slots, MaxCapacity int
	Seed                      int64
	Backend                   string // "cpu" or "cuda:<device>"
	Graph                     bool
	// Ran is how the run's cases ran, as its repro files record it.
	Ran   Ran
	Shard string // "i/n" when the run checked part i of n of the rows, else ""
	// Far: the pools of each row reach past 4 GiB of byte offsets, more
	// slots than Slots (a kind's own rule sets each row's). Scaled: each
	// row's pool is Slots cut to a size in bytes (a GPU without sparse
	// arenas).
	Far, Scaled bool
	// JSON is the kind's top-level JSON after the seed: slots for stores
	// and reads, the geometry for transfers.
	JSON Object
	// Coverage is what the run covered, a line each under the title: the
	// shapes its rows drew and what the plugin would not take, the value
	// classes its rows held. With Shapes set the table names each row's
	// shape.
	Coverage []string
	Shapes   bool
	// About is the kind's own words on the run's setup, for its title: a
	// transfer's geometry.
	About string
}

// Run is a check run of one kind, ready for every writer.
type Run struct {
	Kernel protocol.Kernel
	Header Header
	Title  string
	keys   []Key
	cols   []oracle.Kind
	label  string
	layout bool
	Rows   []Row
	Err    error // the fault or error that stopped the run
}

// Row is one verdict.
type Row struct {
	Layout    *layout.Layout
	Label     string
	Seed      int64
	Cases     int
	Cells     []string // one per column
	Passed    bool
	Faults    []FaultNote // survived plugin faults
	FaultCase workload.Case
	ToFailure time.Duration
	Elapsed   time.Duration
	Failure   *Failure
}

// FaultNote is a plugin fault the run survived, and its case.
type FaultNote struct {
	Err  error
	Case workload.Case
}

// Failure is a failing row's counterexample, ready to print and save.
type Failure struct {
	Plugin, Variant string
	Headline        []string
	Property        oracle.Kind
	Flaky           bool
	// NeedsHistory: the shrunk case failed in the plugin process that ran
	// the search and passed in one started for it.
	NeedsHistory bool
	Replayed     bool // the case came from a repro file, not a search
	// Replays and ReplayFails count a replay's runs of the case (repro
	// --count) and those that failed; zero for a single replay.
	Replays, ReplayFails int
	CaseIndex            int
	Seed                 int64
	Shrinks              int
	ShrinkCut            bool // the shrink stopped at its bound: Case may shrink further
	Case                 workload.Case
	// Rerun is the confirming run's violation count, -1 when it faulted.
	Rerun int
	// Reruns is how many re-runs confirming took (property.Failure.Reruns):
	// above one, the case fails only some runs.
	Reruns int
	// Race: the case found led with a race, two writers of one slot;
	// RaceHits of RaceRuns runs showed the violation: runs of the minimal
	// case, or of the found one when RaceShrunk (it shrank to a case that
	// shows the bug without a race). RaceNote names the two writers.
	Race, RaceShrunk   bool
	RaceRuns, RaceHits int
	RaceNote           string
	write              func(w io.Writer)
	json               Object
	Repro              *Repro
	ReproPath          string // set once the repro file is saved
	ReproErr           error  // why it could not be, when it could not
	// ReplayPlugin, when set, is the --plugin the replay line names: the
	// repro file's plugin is a path or a command, which repro runs only
	// when the command line names it, never from the file alone.
	ReplayPlugin string
	Test         string // go test -run line, when a test found it
}

// Build makes the report of a suite's verdicts through the kind's schema.
func Build[C workload.Case, R Result](s *Schema[C, R], h Header, vs []property.Verdict[C, R], runErr error) (*Run, error) {
	run := &Run{Kernel: s.Kernel, Header: h, Title: s.Title(h), keys: shapeKeys(s.Keys, h.Shapes), cols: columns(s, vs),
		label: s.LabelJSON, layout: s.JSONLayout, Err: runErr}
	if h.Shard != "" {
		run.Title += " · shard " + h.Shard + " of the rows"
	}
	for _, v := range vs {
		row, err := buildRow(s, h, v, run.cols)
		if err != nil {
			return nil, err
		}
		run.Rows = append(run.Rows, row)
	}
	return run, nil
}

// shapeKeys are the schema's key columns, with the row's shape after
// its layout (or first) when the run's rows draw their shapes.
func shapeKeys(keys []Key, shapes bool) []Key {
	if !shapes {
		return keys
	}
	at := 0
	for i, k := range keys {
		if k == LayoutKey {
			at = i + 1
		}
	}
	return append(append(append([]Key(nil), keys[:at]...), ShapeKey), keys[at:]...)
}

// columns are the schema's columns and those of its extra ones that a
// row's failure violated.
func columns[C workload.Case, R Result](s *Schema[C, R], vs []property.Verdict[C, R]) []oracle.Kind {
	cols := append([]oracle.Kind(nil), s.Columns...)
	for _, k := range s.Extra {
		for _, v := range vs {
			if f := v.Outcome.Failure; f != nil && f.Original.Has(k) {
				cols = append(cols, k)
				break
			}
		}
	}
	return cols
}

func buildRow[C workload.Case, R Result](s *Schema[C, R], h Header, v property.Verdict[C, R], cols []oracle.Kind) (Row, error) {
	o := v.Outcome
	row := Row{Layout: v.Layout, Label: v.Label, Seed: v.Seed, Cases: o.Cases, Passed: o.Passed(),
		ToFailure: o.ToFailure, Elapsed: o.Elapsed}
	for _, p := range cols {
		row.Cells = append(row.Cells, cell(s, o, p))
	}
	for _, f := range o.Faults {
		row.Faults = append(row.Faults, FaultNote{Err: f.Fault, Case: f.Case})
	}
	if o.FaultCase != nil {
		row.FaultCase = *o.FaultCase
	}
	fl := o.Failure
	if fl == nil {
		return row, nil
	}
	f := &Failure{Plugin: h.Plugin, Variant: h.Variant, Headline: s.Headline(v.Layout, v.Label), Property: fl.Property,
		Flaky: fl.Flaky, NeedsHistory: fl.NeedsHistory, CaseIndex: o.Cases, Seed: v.Seed, Shrinks: fl.Shrinks, ShrinkCut: fl.ShrinkCut, Reruns: fl.Reruns, Case: fl.Case,
		Rerun: -1, json: s.FailureJSON(fl.Case, fl.Minimal), Race: fl.Race, RaceShrunk: fl.RaceShrunk, RaceRuns: fl.RaceRuns, RaceHits: fl.RaceHits,
		RaceNote: raceNote(fl.Original)}
	if fl.Reran {
		f.Rerun = fl.Rerun.NumViolations()
	}
	l, c, m := v.Layout, fl.Case, fl.Minimal
	f.write = func(w io.Writer) { s.WriteCase(w, l, c, m) }
	r, err := s.Repro(h, v)
	if err != nil {
		return row, err
	}
	f.Repro = r
	row.Failure = f
	return row, nil
}

// cell is a property's status in a row: FAULT when the plugin broke, FAIL
// (FLAKY when unconfirmed) when the first failure violated it, ok else.
func cell[C workload.Case, R Result](s *Schema[C, R], o *property.Outcome[C, R], p oracle.Kind) string {
	switch {
	case o.Fault != nil && errors.Is(o.Fault, context.Canceled) && o.Failure == nil:
		return Stopped
	case o.Fault != nil && !errors.Is(o.Fault, context.Canceled):
		return Fault
	}
	if o.Failure == nil || !counts(s, o.Failure.Original, p) {
		return OK
	}
	if o.Failure.Flaky {
		return Flaky
	}
	return Fail
}

func counts[C workload.Case, R Result](s *Schema[C, R], r R, p oracle.Kind) bool {
	if r.Has(p) {
		return true
	}
	for k, col := range s.Counts {
		if col == p && r.Has(k) {
			return true
		}
	}
	return false
}

// Failures lists the failing rows' failures, in row order.
func (r *Run) Failures() []*Failure {
	var out []*Failure
	for _, row := range r.Rows {
		if row.Failure != nil {
			out = append(out, row.Failure)
		}
	}
	return out
}

// Failed reports whether any row failed.
func (r *Run) Failed() bool { return len(r.Failures()) > 0 }

// Passed reports a clean run: no failure, no fault, survived or not.
func (r *Run) Passed() bool {
	if r.Err != nil {
		return false
	}
	for _, row := range r.Rows {
		if !row.Passed {
			return false
		}
	}
	return true
}

// Interrupted reports whether the run was stopped by its context (a
// signal) rather than run to its end.
func (r *Run) Interrupted() bool { return errors.Is(r.Err, context.Canceled) }

// Finished counts the rows that ran to their verdict.
func (r *Run) Finished() int {
	n := 0
	for _, row := range r.Rows {
		if len(row.Cells) == 0 || row.Cells[0] != Stopped {
			n++
		}
	}
	return n
}

// Faulted reports whether the plugin faulted anywhere, survived or not.
func (r *Run) Faulted() bool {
	if r.Err != nil {
		return true
	}
	for _, row := range r.Rows {
		if len(row.Faults) > 0 {
			return true
		}
	}
	return false
}

// raceNote is the leading race of a result, in words, when its
// violations are oracle.Violations that hold one.
func raceNote(r any) string {
	vs, ok := r.(interface{ RaceViolation() *oracle.Violation })
	if !ok {
		return ""
	}
	v := vs.RaceViolation()
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%s both wrote slot %d", v.Race.Note, v.Race.Slot)
}

// Replay is the command that replays the failure, as printed: empty until
// its repro file is saved.
func (f *Failure) Replay() string {
	if f.ReproPath == "" {
		return ""
	}
	line := "kvharness repro " + ShellQuote(f.ReproPath)
	if f.ReplayPlugin != "" {
		line += " --plugin " + ShellQuote(f.ReplayPlugin)
	}
	return line
}

// ShellQuote quotes s for a POSIX shell when it needs quoting.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\!*?;&|<>(){}[]#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

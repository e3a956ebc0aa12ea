package results

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/measure"
)

// TestNewCellPoolsRuns: a cell's summary and quantiles are over every
// run's samples, its runs summarized apart in pass order, its stop reason
// combined under the cell's criterion.
func TestNewCellPoolsRuns(t *testing.T) {
	id := testCell(t, "p", 16, 8, 100).Identity
	runs := testRuns(id, 3, 300, 1000)
	runs[0], runs[2] = runs[2], runs[0] // any order in, pass order out
	runs[1].Stop.Kind = measure.StopTimeLimit
	c, err := NewCell(runs, []float64{0.5, 0.99}, measure.Criterion{MinSamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	var all []float64
	for _, p := range []int{2, 1, 0} {
		all = append(all, runs[p].Samples...)
	}
	p99, _ := measure.Quantile(all, 0.99)
	if c.Summary.N != 300 || c.Quantiles[1] != (QuantileValue{0.99, p99}) || !reflect.DeepEqual(c.Samples, all) {
		t.Errorf("pooled: n %d, quantiles %v (want p99 %v of all samples)", c.Summary.N, c.Quantiles, p99)
	}
	for i, r := range c.Runs {
		if r.Pass != i+1 || r.Summary.N != 100 {
			t.Errorf("run %d: pass %d with %d samples", i, r.Pass, r.Summary.N)
		}
	}
	if c.Stop.Kind != measure.StopTimeLimit || c.Stop.Runs != 3 || c.Stop.ConvergedRuns != 2 || c.Stop.Enough() != nil {
		t.Errorf("stop %+v: want time-limit, 3 runs, 2 converged, enough samples", c.Stop)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("assembled cell invalid: %v", err)
	}
	other := runs[0]
	other.Tokens = 99
	if _, err := NewCell([]Run{runs[1], other}, nil, measure.Criterion{}); err == nil {
		t.Error("runs of two cells made one cell")
	}
}

func TestCellRunsMustAddUp(t *testing.T) {
	c := testCell(t, "p", 16, 40, 1000)
	c.Runs[1].Summary.N++
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "its runs hold 41 samples") {
		t.Errorf("runs of 41 samples under a summary of 40: %v", err)
	}
	c = testCell(t, "p", 16, 40, 1000)
	c.Runs[1].Pass = 1
	if err := c.Validate(); err == nil {
		t.Error("two runs of pass 1 accepted")
	}
}

// TestSchemaVersions: records carry their schema; a reader refuses a
// version it does not know, naming it, and reads unversioned cells as
// version 1.
func TestSchemaVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	writeLog(t, path, testCell(t, "a", 16, 8, 100))
	log, err := ReadLogFile(path)
	if err != nil || log.Cells[0].Schema != CellSchema {
		t.Fatalf("read back: %v, schema %q; want %s", err, log.Cells[0].Schema, CellSchema)
	}
	old := `{"plugin":"p","plugin_version":"1","kernel":"store","layout":"bf16","head_dim":128,"page_size":64,"tokens":1,"mode":"eager","cache":"hot","timing":"per-launch","batch_size":1,"summary":{"n":1,"p50_ns":5}}` + "\n"
	if l, err := ReadLog(strings.NewReader(old), "old.jsonl"); err != nil || len(l.Cells) != 1 || len(l.Cells[0].RunSummaries()) != 1 {
		t.Errorf("a version 1 cell: %v; want it read as one run", err)
	}
	future := strings.Replace(old, `{"plugin"`, `{"schema":"kvharness.cell/v9","plugin"`, 1)
	_, err = ReadLog(strings.NewReader(future), "new.jsonl")
	var le *LineError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "schema kvharness.cell/v9: this kvharness reads kvharness.cell/v1 and kvharness.cell/v2") {
		t.Errorf("a future cell: %v; want a LineError naming both versions", err)
	}
	run := strings.Replace(old, `{"plugin"`, `{"schema":"kvharness.run/v1","pass":1,"samples_ns":[5],"plugin"`, 1)
	if _, err := ReadLog(strings.NewReader(run), "runs.jsonl"); err == nil || !strings.Contains(err.Error(), "not a kvharness.cell record") {
		t.Errorf("a run read as a cell: %v; want a refusal naming the record kind", err)
	}
}

// TestRunJournal: runs round-trip through the journal, a torn final line
// is forgiven, and a repeated run keeps the later line.
func TestRunJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	w := mustOpenLog(t, path)
	id := testCell(t, "p", 16, 8, 100).Identity
	runs := testRuns(id, 3, 30, 1000)
	for _, r := range runs {
		if err := w.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	again := runs[1]
	again.Samples = []float64{1}
	if err := w.AppendRun(again); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendRun(Run{Identity: id}); err == nil {
		t.Error("a run without pass or samples was appended")
	}
	w.Close()
	appendRaw(t, path, `{"schema":"kvharness.run/v1","plu`)
	log, err := ReadRunsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 3 || !reflect.DeepEqual(log.Runs[1].Samples, []float64{1}) || !log.Done[runs[2].Key()] {
		t.Errorf("journal: %d runs, pass 2 samples %v; want 3 runs with the later pass 2", len(log.Runs), log.Runs[1].Samples)
	}
	if len(log.Warnings) != 2 {
		t.Errorf("warnings %v; want the repeated run and the torn line", log.Warnings)
	}
}

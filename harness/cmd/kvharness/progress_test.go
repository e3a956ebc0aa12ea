package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/results"
)

// TestBenchProgress: a night's display counts runs against the plan
// (a resumed night starts at the runs it kept) and prints a line per
// finished cell, a plugin's name in it escaped, the last one too when the
// display ends before its next draw.
func TestBenchProgress(t *testing.T) {
	var b bytes.Buffer
	g := newProgress(&b, "bench", "runs")
	o := &benchObserver{g: g}
	o.Planned(6, 2)
	for range 4 {
		o.Ran(results.Run{})
	}
	c := results.Cell{Identity: results.Identity{Plugin: "evil\x1b[2J", Kernel: "store", Layout: "bf16", Tokens: 32,
		Mode: results.Eager, Cache: results.Hot, Timing: results.PerLaunch}, Summary: measure.Summary{P50: 1500},
		Runs: make([]results.RunSummary, 4)}
	o.CellDone(c)
	if g.total != 6 || g.bar.Current() != 6 {
		t.Errorf("the bar is at %d of %d runs, want 6 of 6", g.bar.Current(), g.total)
	}
	g.done() // at once: the cell's line must not wait for a draw that never comes
	out := b.String()
	for _, want := range []string{"store evil\\x1b[2J bf16", "32 tokens", "4 runs", "p50 1.50µs"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "\x1b[2J") {
		t.Errorf("a plugin's escape reached the terminal: %q", out)
	}
}

// TestNoProgressOffTerminal: with stderr not a terminal (a pipe, a CI
// log) there is no display, and its methods do nothing.
func TestNoProgressOffTerminal(t *testing.T) {
	var out, errs bytes.Buffer
	g := progressOn(&env{stdout: &out, stderr: &errs}, "check", "cases")
	if g != nil {
		t.Fatal("a progress display on a buffer")
	}
	(&benchObserver{g: g}).Planned(3, 0)
	g.line("x")
	g.done()
	if errs.Len() > 0 {
		t.Errorf("wrote %q", errs.String())
	}
}

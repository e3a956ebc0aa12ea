package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/measure"
	"github.com/kvharness/kvharness/harness/property"
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

// TestNoProgressOnABuffer: with stderr no file at all (a test's
// buffer) there is no display, and its methods do nothing.
func TestNoProgressOnABuffer(t *testing.T) {
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

// TestLogOffTerminal: on a pipe the display is a log: each finished row's
// line as it finishes, and, while a row runs long with nothing written, a
// heartbeat line with the units done, their rate and the time elapsed,
// at most once per heartbeatEvery.
func TestLogOffTerminal(t *testing.T) {
	defer func(d time.Duration) { heartbeatEvery = d }(heartbeatEvery)
	heartbeatEvery = 200 * time.Millisecond
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g := progressOn(&env{stdout: io.Discard, stderr: w}, "check", "cases")
	if g == nil || g.log == nil {
		t.Fatal("no log on a pipe")
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	o := &caseObserver{g: g}
	o.Started(2, 10)
	for range 10 {
		o.Checked()
	}
	o.Finished(property.RowDone{Layout: "bf16", Label: "none", Cases: 10, Wanted: 10, Elapsed: 1500 * time.Millisecond})
	if got := <-lines; !strings.Contains(got, "bf16/none") || !strings.Contains(got, "ok") || !strings.Contains(got, "10 cases") {
		t.Errorf("row line %q; want the row, its verdict and cases, as it finished", got)
	}
	o.Checked()
	beat := <-lines // the second row runs long: nothing else is written
	if !strings.Contains(beat, "check: 11/20 cases") || !strings.Contains(beat, "cases/") || !strings.Contains(beat, "elapsed") {
		t.Errorf("heartbeat %q; want cases done of all, their rate and the time elapsed", beat)
	}
	start := time.Now()
	<-lines
	if gap := time.Since(start); gap < heartbeatEvery/2 {
		t.Errorf("two heartbeats %v apart; want one per %v of silence", gap, heartbeatEvery)
	}
	g.done()
	w.Close()
	for l := range lines {
		if !strings.HasPrefix(l, "  … check:") {
			t.Errorf("after done: %q", l)
		}
	}
}

// TestHeartbeatRate: a rate under one a second is said per minute.
func TestHeartbeatRate(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		d    time.Duration
		want string
	}{{400, 10 * time.Second, "40.0 cases/s"}, {6, 155 * time.Second, "2.3 cases/min"}, {0, time.Minute, "0.0 cases/s"}} {
		if got := rate(tc.n, tc.d, "cases"); got != tc.want {
			t.Errorf("rate(%d, %v) = %q, want %q", tc.n, tc.d, got, tc.want)
		}
	}
}

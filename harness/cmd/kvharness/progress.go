package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/results"
)

// progress is what a long command shows while it works, on stderr (stdout
// stays the report alone).
//
// On a terminal it is a bar of units done (cases, subjects, runs) with
// their rate, elapsed time and ETA, and above it one line per row as each
// finishes. The bar is mpb's (github.com/vbauerster/mpb): it keeps lines
// printed above a live bar in place, which a bar redrawn by hand gets
// wrong as soon as a line is longer than the terminal.
//
// Off a terminal (a pipe, a file: a CI log) it is a log: the same line
// per finished row, written as the row finishes, and a heartbeat line
// (units done, rate, elapsed) whenever heartbeatEvery has passed with
// nothing written, so that a long row does not look like a hung job.
type progress struct {
	p *mpb.Progress // nil for a log
	// refresh asks mpb to draw: every refreshEvery, and once more when
	// the display ends, so that the lines of the last rows (mpb prints
	// lines at its next draw) are not dropped with the bar.
	refresh chan any
	stop    chan struct{}
	mu      sync.Mutex
	bar     *mpb.Bar
	total   int64
	what    string // "cases", "mutants"
	label   string

	log      io.Writer // off a terminal: where lines go
	start    time.Time
	count    int64         // units done, for the heartbeat
	lastLine time.Time     // when the log was last written
	beating  chan struct{} // closed when the heartbeat's goroutine ends
}

// progressOn is a progress display on e's stderr: a bar on a terminal, a
// log on a pipe or a file; nil (every method of a nil *progress does
// nothing) when stderr is not a file at all (a test's buffer).
func progressOn(e *env, label, what string) *progress {
	f, ok := terminalFile(e.stderr)
	if !ok {
		return nil
	}
	if !term.IsTerminal(int(f.Fd())) {
		return newLog(e.stderr, label, what) // through the checked, escaping stream
	}
	return newProgress(f, label, what)
}

// refreshEvery is how often the display is drawn.
const refreshEvery = 200 * time.Millisecond

// heartbeatEvery is how long a log stays silent before a heartbeat line.
var heartbeatEvery = 30 * time.Second

func newProgress(w io.Writer, label, what string) *progress {
	g := &progress{refresh: make(chan any), stop: make(chan struct{}), what: what, label: label}
	g.p = mpb.New(mpb.WithOutput(w), mpb.WithWidth(32), mpb.WithManualRefresh(g.refresh))
	go func() {
		t := time.NewTicker(refreshEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				select {
				case g.refresh <- nil:
				case <-g.stop:
					return
				}
			case <-g.stop:
				return
			}
		}
	}()
	return g
}

// newLog is a progress that writes lines to w as they come, and a
// heartbeat when it has been silent for heartbeatEvery.
func newLog(w io.Writer, label, what string) *progress {
	now := time.Now()
	g := &progress{stop: make(chan struct{}), what: what, label: label, log: w, start: now, lastLine: now, beating: make(chan struct{})}
	go func() {
		defer close(g.beating)
		t := time.NewTicker(min(heartbeatEvery/4, time.Second))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				g.heartbeat()
			case <-g.stop:
				return
			}
		}
	}()
	return g
}

// heartbeat writes the log's heartbeat line when it is due.
func (g *progress) heartbeat() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if now.Sub(g.lastLine) < heartbeatEvery || g.total == 0 {
		return
	}
	elapsed := now.Sub(g.start)
	fmt.Fprintf(g.log, "  … %s: %d/%d %s, %s, %v elapsed\n", g.label, g.count, g.total, g.what,
		rate(g.count, elapsed, g.what), elapsed.Round(time.Second))
	g.lastLine = now
}

// rate is count units over elapsed as a heartbeat says it: per second,
// or per minute when that is under one.
func rate(count int64, elapsed time.Duration, what string) string {
	per := float64(count) / elapsed.Seconds()
	if per >= 1 || count == 0 {
		return fmt.Sprintf("%.1f %s/s", per, what)
	}
	return fmt.Sprintf("%.1f %s/min", per*60, what)
}

// grow adds n units to the bar's total, making the bar on first use.
func (g *progress) grow(n int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total += int64(n)
	if g.log != nil {
		return
	}
	if g.bar != nil {
		g.bar.SetTotal(g.total, false)
		return
	}
	g.bar = g.p.New(g.total, mpb.BarStyle().Lbound("[").Rbound("]"),
		mpb.PrependDecorators(decor.Name(g.label+" "), decor.CountersNoUnit("%d/%d "+g.what)),
		mpb.AppendDecorators(
			decor.AverageSpeed(0, " %.0f "+g.what+"/s"),
			decor.Name(" · "), decor.Elapsed(decor.ET_STYLE_GO),
			decor.Name(" · ETA "), decor.AverageETA(decor.ET_STYLE_GO)))
}

// step counts n units done.
func (g *progress) step(n int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.count += int64(n)
	if g.bar != nil {
		g.bar.IncrBy(n)
	}
	g.mu.Unlock()
}

// line prints a finished row above the bar, or into the log.
func (g *progress) line(format string, args ...any) {
	if g == nil {
		return
	}
	if g.log != nil {
		g.mu.Lock()
		fmt.Fprintf(g.log, format+"\n", args...)
		g.lastLine = time.Now()
		g.mu.Unlock()
		return
	}
	fmt.Fprintf(g.p, format+"\n", args...)
}

// done removes the bar and waits until the terminal is left clean for the
// report.
func (g *progress) done() {
	if g == nil {
		return
	}
	close(g.stop)
	if g.log != nil {
		<-g.beating // no heartbeat after the report
		return
	}
	// mpb takes one draw request at a time: once it has taken the second,
	// it has drawn the first, which printed every line written before.
	for range 2 {
		select {
		case g.refresh <- nil:
		case <-time.After(time.Second): // mpb stopped drawing (a terminal it could not size)
		}
	}
	g.mu.Lock()
	if g.bar != nil {
		g.bar.Abort(true)
	}
	g.mu.Unlock()
	g.p.Wait()
}

// caseObserver feeds a check's cases and finished rows to a progress
// display.
type caseObserver struct {
	g      *progress
	mu     sync.Mutex
	wanted int // cases the bar counts on for rows not yet finished
}

var _ property.Observer = (*caseObserver)(nil)

// observe returns ctx carrying an observer that draws on g; ctx itself
// when g is nil.
func observe(ctx context.Context, g *progress) context.Context {
	if g == nil {
		return ctx
	}
	return property.WithObserver(ctx, &caseObserver{g: g})
}

func (o *caseObserver) Started(rows, cases int) { o.g.grow(rows * cases) }
func (o *caseObserver) Checked()                { o.g.step(1) }

// Finished prints the row and moves the bar past the cases a row that
// ended early will not check.
func (o *caseObserver) Finished(d property.RowDone) {
	if d.Wanted > d.Cases {
		o.g.step(d.Wanted - d.Cases)
	}
	o.g.line("%s", rowLine(d))
}

// rowLine is a finished row in one line: its name, verdict, cases and
// time.
func rowLine(d property.RowDone) string {
	name := doneName(d)
	verdict := "ok"
	switch {
	case d.Failed && d.Flaky:
		verdict = "FLAKY " + string(d.Property)
	case d.Failed:
		verdict = "FAIL " + string(d.Property)
	case errors.Is(d.Fault, context.Canceled):
		verdict = "stopped"
	case d.Fault != nil:
		verdict = "FAULT"
	case d.Faults > 0:
		verdict = fmt.Sprintf("ok after %d plugin faults", d.Faults)
	}
	return fmt.Sprintf("  %-24s %-16s %6d cases  %v", name, verdict, d.Cases, d.Elapsed.Round(time.Millisecond))
}

// doneName is a finished row as lines name it: layout/label, or the label.
func doneName(d property.RowDone) string {
	name := textsafe.String(d.Label)
	if d.Layout != "" {
		name = textsafe.String(d.Layout) + "/" + name
	}
	return name
}

// benchObserver feeds a night's runs to a progress display, and prints a
// line per cell as its last run finishes.
type benchObserver struct{ g *progress }

var _ benchrun.Observer = (*benchObserver)(nil)

func (o *benchObserver) Planned(total, done int) {
	o.g.grow(total)
	o.g.step(done)
}

func (o *benchObserver) Ran(results.Run) { o.g.step(1) }

func (o *benchObserver) CellDone(c results.Cell) { o.g.line("%s", cellLine(c)) }

// cellLine is a finished cell in one line: what it measured, its runs and
// its pooled median.
func cellLine(c results.Cell) string {
	name := fmt.Sprintf("%s %s %s", textsafe.String(c.Kernel), textsafe.String(c.Plugin), textsafe.String(c.Layout))
	return fmt.Sprintf("  %-34s %7d tokens  %-5s %-4s %-10s %3d runs  p50 %s", name, c.Tokens, c.Mode, c.Cache, c.Timing,
		len(c.Runs), benchrun.Duration(c.Summary.P50))
}

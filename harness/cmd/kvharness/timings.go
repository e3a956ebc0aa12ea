package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kvharness/kvharness/harness/property"
)

// timings records where a check's time went, for --timings: the setup
// before the first row (the plugin's start, the session), each row's
// targets opening and its search, and a failing row's re-runs, shrinking
// and fresh-process check. It prints after the report, on stderr.
type timings struct {
	start   time.Time
	mu      sync.Mutex
	started time.Duration // from the command's start to the suite's
	rows    []property.RowDone
	next    property.Observer // the progress display, if any
}

var _ property.Observer = (*timings)(nil)

func newTimings(start time.Time) *timings { return &timings{start: start} }

// observe returns ctx carrying t (and the observer ctx already carries).
func (t *timings) observe(ctx context.Context) context.Context {
	if t == nil {
		return ctx
	}
	t.next = property.ObserverOf(ctx)
	return property.WithObserver(ctx, t)
}

func (t *timings) Started(rows, cases int) {
	t.mu.Lock()
	if t.started == 0 {
		t.started = time.Since(t.start)
	}
	t.mu.Unlock()
	t.next.Started(rows, cases)
}

func (t *timings) Checked() { t.next.Checked() }

func (t *timings) Finished(d property.RowDone) {
	t.mu.Lock()
	t.rows = append(t.rows, d)
	t.mu.Unlock()
	t.next.Finished(d)
}

// write prints the timings; reported is the time since the start once the
// report was written.
func (t *timings) write(w io.Writer, reported time.Duration) {
	if t == nil {
		return
	}
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	fmt.Fprintf(w, "timings (from the command's start):\n")
	fmt.Fprintf(w, "  setup   %s: the plugin started, described and trusted, before the first row\n", ms(t.started))
	for _, d := range t.rows {
		fmt.Fprintf(w, "  %s: %s\n", doneName(d), rowTimes(d, ms))
	}
	fmt.Fprintf(w, "  report  %s after the start\n", ms(reported))
}

// rowTimes is where one row's time went.
func rowTimes(d property.RowDone, ms func(time.Duration) string) string {
	open := ""
	if d.Close > time.Millisecond { // the row before's targets, closed first
		open = "close " + ms(d.Close) + " · "
	}
	if d.Open > 0 {
		open += "open " + ms(d.Open) + " · "
	}
	if !d.Failed {
		return fmt.Sprintf("%s%d cases %s", open, d.Cases, ms(d.Elapsed))
	}
	shrink := max(d.Elapsed-d.ToFailure-d.Confirming-d.Fresh, 0)
	return fmt.Sprintf("%sfirst failure after %s (case %d) · re-runs %s · shrink %s · fresh process %s",
		open, ms(d.ToFailure), d.Cases, ms(d.Confirming), ms(shrink), ms(d.Fresh))
}

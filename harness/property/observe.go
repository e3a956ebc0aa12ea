package property

import (
	"context"
	"time"

	"github.com/kvharness/kvharness/harness/oracle"
)

// An Observer is told how a suite is getting on, as it goes: what a
// progress display on a terminal shows while a check runs for minutes.
// A suite's jobs call it concurrently. It is carried by the context (see
// WithObserver), as net/http/httptrace carries a trace: observing is
// optional and no kind has to pass it along.
type Observer interface {
	// Started says a suite of rows × cases passing cases is beginning.
	Started(rows, cases int)
	// Checked says one more case was checked (shrink steps not counted).
	Checked()
	// Finished says a row reached its verdict.
	Finished(RowDone)
}

// RowDone is a finished row as an observer sees it.
type RowDone struct {
	Layout, Label string // the row's layout ("" when it has none) and label
	Cases         int    // cases checked; fewer than wanted when it failed or stopped
	Wanted        int
	Elapsed       time.Duration
	// Open is the time the row's targets took to open (plugin processes
	// started, arenas made and attached) before its first case: zero when
	// the row ran on the targets of the row before it.
	Open time.Duration
	// Close is the time the targets of the row before took to close
	// (detached, arenas freed) before this row's opened: a device arena's
	// teardown is paid here, not in the row that used it.
	Close time.Duration
	// ToFailure, Confirming and Fresh are the outcome's: the search up
	// to the first failure, its re-runs, its check in a fresh process.
	ToFailure, Confirming, Fresh time.Duration
	Failed                       bool        // a violation was found
	Property                     oracle.Kind // the failure's property
	Flaky                        bool
	Fault                        error // what stopped the row, if anything
	Faults                       int   // plugin faults survived
}

type observerKey struct{}

// WithObserver returns a context whose suites and property runs report
// to o.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// ObserverOf is the context's observer, or one that ignores everything:
// for an observer that passes what it is told on.
func ObserverOf(ctx context.Context) Observer { return observer(ctx) }

// observer is the context's observer, or one that ignores everything.
func observer(ctx context.Context) Observer {
	if o, ok := ctx.Value(observerKey{}).(Observer); ok && o != nil {
		return o
	}
	return nobody{}
}

type nobody struct{}

func (nobody) Started(int, int) {}
func (nobody) Checked()         {}
func (nobody) Finished(RowDone) {}

// rowDone summarises a row's outcome for observers.
func rowDone[C any, R Result](layout, label string, wanted int, o *Outcome[C, R]) RowDone {
	d := RowDone{Layout: layout, Label: label, Cases: o.Cases, Wanted: wanted, Elapsed: o.Elapsed,
		ToFailure: o.ToFailure, Confirming: o.Confirming, Fresh: o.Fresh, Fault: o.Fault, Faults: len(o.Faults)}
	if f := o.Failure; f != nil {
		d.Failed, d.Property, d.Flaky = true, f.Property, f.Flaky
	}
	return d
}

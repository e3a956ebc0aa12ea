package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/property"
)

// subjectTimes records, for mutants --timings, where each subject's time
// went: its session (a process started ahead, waited for, or one started
// then), and each row of its suite up to the kill: the target's opening
// (on a GPU: the arena, and the plugin's first attach, which makes its
// CUDA context when the process did not, and compiles or loads its
// kernels) and its cases.
type subjectTimes struct {
	mu    sync.Mutex
	order []string
	lines map[string][]string
}

type subjectKey struct{}

// subjectObserver is one subject's recorder, carried in its context.
type subjectObserver struct {
	t    *subjectTimes
	name string
	next property.Observer
}

// observe returns ctx recording subject s of plugin name; ctx itself when
// t is nil.
func (t *subjectTimes) observe(ctx context.Context, name string, s mutants.Subject) context.Context {
	if t == nil {
		return ctx
	}
	n := textsafe.String(name)
	if s.Variant != "" {
		n += "/" + textsafe.String(s.Variant)
	}
	if s.Kernel != "" {
		n += " (" + string(s.Kernel) + ")"
	}
	o := &subjectObserver{t: t, name: n, next: property.ObserverOf(ctx)}
	t.mu.Lock()
	if t.lines == nil {
		t.lines = map[string][]string{}
	}
	t.order = append(t.order, n)
	t.mu.Unlock()
	return context.WithValue(property.WithObserver(ctx, o), subjectKey{}, o)
}

func (o *subjectObserver) add(line string) {
	o.t.mu.Lock()
	o.t.lines[o.name] = append(o.t.lines[o.name], line)
	o.t.mu.Unlock()
}

func (o *subjectObserver) Started(rows, cases int) { o.next.Started(rows, cases) }
func (o *subjectObserver) Checked()                { o.next.Checked() }
func (o *subjectObserver) Finished(d property.RowDone) {
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	o.add(fmt.Sprintf("%s: %s", doneName(d), rowTimes(d, ms)))
	o.next.Finished(d)
}

// sessionTook records the subject's session: one started then, or one
// started ahead (pre) and waited for, with what its warm-up did.
func sessionTook(ctx context.Context, d time.Duration, pre *prestart) {
	o, ok := ctx.Value(subjectKey{}).(*subjectObserver)
	if !ok {
		return
	}
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	what := "plugin process started, described"
	switch {
	case pre == nil:
	case pre.cold != nil:
		what = "waited for the process started ahead; its warm-up failed (" + textsafe.String(pre.cold.Error()) + "), so a fresh one was started"
	case pre.warmed > 0:
		what = "waited for the process started ahead, its first row's target opened and closed there in " + ms(pre.warmed)
	default:
		what = "waited for the process started ahead"
	}
	o.add(fmt.Sprintf("session %s: %s", ms(d), what))
}

// write prints every subject's lines, in run order.
func (t *subjectTimes) write(w io.Writer) {
	if t == nil {
		return
	}
	fmt.Fprintln(w, "timings, per subject:")
	for _, n := range t.order {
		fmt.Fprintf(w, "  %s\n", n)
		for _, l := range t.lines[n] {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

package pdasync

import (
	"context"
	"fmt"
	"time"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// run is one case being played: the target, the world as the harness
// knows it, the wire (notifications raised but not yet delivered), and the
// decode pools as last observed.
type run struct {
	ctx     context.Context
	t       *Target
	c       *Case
	w       *world
	res     *Result
	queue   []*kvpb.AsyncNotification
	at      string           // where the run is, for violations and the trace
	image   *image           // the decode pages, as last read
	tbl     []uint64         // the decode's page table, as sent
	seen    map[pageKey]bool // pages already reported
	touched map[pageKey]bool // pages that changed: by a copy, or by a reassignment
	stop    bool             // a hung engine, or one that lied about completion, ended the run
	polled  bool             // the prefill was polled since the last gate was set or room posted
	settled bool             // the last poll's transport was quiet: no copy was in flight (AsyncPollResponse.settled)
}

// settledPolls is how many polls in a row, each after every opened
// handle had ended, may find a note still missing before the engine is
// called hung: an engine notices a handle's end when it polls, and a
// correct one says so at the first of them.
const settledPolls = 3

// Check plays a case on the target and judges every answer.
func (t *Target) Check(ctx context.Context, c *Case) (*Result, error) {
	if c.Geometry.Key() != t.Geometry.Key() {
		return nil, fmt.Errorf("pdasync case over %v, target over %v: open a target for the case's geometry", c.Geometry, t.Geometry)
	}
	if err := c.Validate(0); err != nil {
		return nil, fmt.Errorf("pdasync case: %w", err)
	}
	if err := t.Ensure(ctx); err != nil {
		return nil, err
	}
	if err := t.reset(ctx); err != nil {
		return nil, err
	}
	if err := t.release(); err != nil {
		return nil, err
	}
	if err := t.materialize(c); err != nil {
		return nil, err
	}
	r := newRun(ctx, t, c)
	if err := r.play(); err != nil {
		return nil, err
	}
	r.res.Violations = finish(append(append([]Violation(nil), t.GeometryViolations...), r.res.Violations...))
	return r.res, nil
}

func newRun(ctx context.Context, t *Target, c *Case) *run {
	return &run{ctx: ctx, t: t, c: c, w: newWorld(c, t.Buffers), res: &Result{}, seen: map[pageKey]bool{}, touched: map[pageKey]bool{}}
}

// play admits the first rooms, runs the steps, drains, and checks what the
// run left.
func (r *run) play() error {
	var err error
	if r.image, err = r.readPools(); err != nil {
		return err
	}
	r.at = "setup"
	for i, room := range r.c.Rooms {
		if room.After == nil {
			if err := r.admit(i); err != nil {
				return err
			}
		}
	}
	for i, s := range r.c.Steps {
		if r.stop {
			break
		}
		r.at = fmt.Sprintf("step %d (%s)", i+1, s)
		if err := r.do(s); err != nil {
			return err
		}
	}
	r.at = "drain"
	if !r.stop {
		if err := r.drain(); err != nil {
			return err
		}
	}
	return r.final()
}

func (r *run) trace(format string, args ...any) {
	r.res.Trace = append(r.res.Trace, r.at+": "+fmt.Sprintf(format, args...))
}

func (r *run) violation(k oracle.Kind) Violation { return newViolation(k, r.at) }

// do plays one step. A step on a handle or room that is not live (a room
// not admitted yet, a gate already set) does nothing.
func (r *run) do(s Step) error {
	switch s.Op {
	case OpRelease, OpFail:
		hi := r.w.byRef[s.Handle]
		h := r.w.handles[hi]
		if !h.posted || h.gate != gateHeld {
			r.trace("skipped: %s is not posted or its gate is already set", s.Handle)
			return nil
		}
		v := uint32(gateGo)
		if s.Op == OpFail {
			v = gateFail
		}
		return r.open([]int{hi}, v)
	case OpPoll:
		return r.poll(0)
	case OpDeliver:
		return r.deliver(r.pick(s))
	case OpAbort:
		return r.abort(s.Room)
	}
	return fmt.Errorf("step %v: unknown op", s)
}

// open sets the gates of handles, waits until the prefill has told each
// of them (and each component they complete), then reads what landed. It
// polls once before, with the gates still held (unless the last poll saw
// the gates as they are): an engine that takes a successful poll for
// completion says so then, whatever the timing.
func (r *run) open(his []int, v uint32) error {
	if !r.polled {
		if err := r.poll(0); err != nil || r.stop {
			return err
		}
	}
	r.polled = false
	for _, hi := range his {
		h := r.w.handles[hi]
		if err := r.t.setGate(hi, v); err != nil {
			return err
		}
		h.gate, h.setAt = v, r.at
	}
	if err := r.await(his); err != nil || r.stop {
		return err
	}
	return r.observe(his)
}

// await polls the prefill until every handle of his has its note and every
// component they leave with no handle pending has its own. The engine is
// hung, and the run stops, when settledPolls polls in a row found a note
// missing though no copy was in flight (the SDK's transport says so: a
// plugin that answers is alive, and waiting longer shows nothing), or,
// from an SDK that cannot tell, when the wait runs out.
func (r *run) await(his []int) error {
	deadline := time.Now().Add(r.t.Wait)
	quiet := 0
	for {
		missing := r.missing(his)
		if len(missing) == 0 || r.stop {
			return nil
		}
		if err := r.poll(min(time.Until(deadline), 100*time.Millisecond)); err != nil {
			return err
		}
		if len(r.missing(his)) == 0 {
			continue
		}
		if r.settled {
			quiet++
		}
		switch {
		case quiet >= settledPolls:
			r.hung(fmt.Sprintf("the prefill never told %s: every copy of the handles opened had ended, and %d polls after that raised no note for it",
				missing[0], settledPolls))
			return nil
		case time.Now().After(deadline):
			r.hung(fmt.Sprintf("the prefill never told %s within %v of the harness opening or failing the gate", missing[0], r.t.Wait))
			return nil
		}
	}
}

// hung records the engine as hung (a liveness violation) and stops the
// run.
func (r *run) hung(detail string) {
	v := r.violation(Liveness)
	v.Detail = detail
	r.res.Add(v)
	r.stop = true
}

// missing lists the notes await still waits for.
func (r *run) missing(his []int) []string {
	var out []string
	for _, hi := range his {
		h := r.w.handles[hi]
		if h.told == 0 {
			out = append(out, "handle "+h.ref.String())
			continue
		}
		ri, ci := h.ref.Room, h.ref.Comp
		if r.w.rooms[ri].compTold[ci] == 0 && r.componentEnded(ri, ci) {
			out = append(out, fmt.Sprintf("component %d of room %d (all its handles ended)", ci, ri))
		}
	}
	return out
}

// componentEnded reports whether every handle of a component has ended.
func (r *run) componentEnded(ri, ci int) bool {
	for _, hi := range r.w.handlesOf(ri, ci) {
		if !r.w.handles[hi].ended() {
			return false
		}
	}
	return true
}

// drain opens every gate still held and delivers every withheld note,
// until nothing moves: rooms admitted on the way (successors) drain too.
func (r *run) drain() error {
	for range 4 * (len(r.c.Rooms) + 1) {
		var held []int
		for hi, h := range r.w.handles {
			if h.posted && h.gate == gateHeld {
				held = append(held, hi)
			}
		}
		if len(held) > 0 {
			if err := r.open(held, gateGo); err != nil || r.stop {
				return err
			}
		}
		if len(held) == 0 && len(r.queue) == 0 {
			return nil
		}
		if err := r.deliver(r.queue); err != nil {
			return err
		}
	}
	return nil
}

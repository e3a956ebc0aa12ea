package pdasync

import (
	"fmt"
	"strings"
)

// Op is what a step does.
type Op string

// The ops of a schedule.
const (
	// OpRelease opens a handle's gate: its copies run. The harness then
	// polls the prefill until the handle's notification comes (and its
	// component's, when it was the component's last), and withholds them.
	OpRelease Op = "release"
	// OpFail fails a handle: its copies may land in part, and the handle
	// must report failure.
	OpFail Op = "fail"
	// OpPoll polls the prefill once, with whatever gates held: a handle it
	// reports done now cannot have run.
	OpPoll Op = "poll"
	// OpDeliver delivers withheld notifications to the decode: one
	// component's handle notes, its component note, or both, or everything.
	OpDeliver Op = "deliver"
	// OpAbort aborts a room at the decode.
	OpAbort Op = "abort"
)

// What a deliver step delivers of one component.
type What string

// What can be delivered.
const (
	DeliverHandles   What = "handles"
	DeliverComponent What = "component"
	DeliverAll       What = "all"
)

// AllRooms is a deliver step's Room when it delivers everything withheld.
const AllRooms = -1

// Step is one move of the harness's schedule. In repro files and reports a
// step is its text:
//
//	release h0.1.0          fail h2.0.1         poll
//	deliver r0.c1 handles   deliver r0.c1 component
//	deliver r0.c1 all       deliver all         abort r2
//
// where hR.C.K is room R's component C's handle K.
type Step struct {
	Op     Op
	Handle HandleRef // release, fail
	Room   int       // deliver (AllRooms: everything), abort
	Comp   int       // deliver
	What   What      // deliver of one component
}

// Release, Fail, Poll, Deliver, DeliverEverything and Abort build steps.
func Release(h HandleRef) Step { return Step{Op: OpRelease, Handle: h} }

// Fail is the step failing handle h.
func Fail(h HandleRef) Step { return Step{Op: OpFail, Handle: h} }

// Poll is the step polling the prefill.
func Poll() Step { return Step{Op: OpPoll} }

// Deliver is the step delivering what of room r's component c.
func Deliver(r, c int, what What) Step { return Step{Op: OpDeliver, Room: r, Comp: c, What: what} }

// DeliverEverything is the step delivering every withheld notification.
func DeliverEverything() Step { return Step{Op: OpDeliver, Room: AllRooms} }

// Abort is the step aborting room r.
func Abort(r int) Step { return Step{Op: OpAbort, Room: r} }

func (s Step) String() string {
	switch s.Op {
	case OpRelease, OpFail:
		return fmt.Sprintf("%s %s", s.Op, s.Handle)
	case OpDeliver:
		if s.Room == AllRooms {
			return "deliver all"
		}
		return fmt.Sprintf("deliver r%d.c%d %s", s.Room, s.Comp, s.What)
	case OpAbort:
		return fmt.Sprintf("abort r%d", s.Room)
	}
	return string(s.Op)
}

// MarshalText implements encoding.TextMarshaler: the step's text.
func (s Step) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler, strictly.
func (s *Step) UnmarshalText(b []byte) error {
	x, err := ParseStep(string(b))
	if err == nil {
		*s = x
	}
	return err
}

// ParseStep reads a step's text.
func ParseStep(text string) (Step, error) {
	f := strings.Fields(text)
	bad := fmt.Errorf("step %q: want release hR.C.K, fail hR.C.K, poll, deliver rR.cC handles|component|all, deliver all or abort rR", text)
	if len(f) == 0 {
		return Step{}, bad
	}
	switch op := Op(f[0]); {
	case (op == OpRelease || op == OpFail) && len(f) == 2:
		var h HandleRef
		if n, err := fmt.Sscanf(f[1], "h%d.%d.%d", &h.Room, &h.Comp, &h.K); err != nil || n != 3 || h.String() != f[1] {
			return Step{}, bad
		}
		return Step{Op: op, Handle: h}, nil
	case op == OpPoll && len(f) == 1:
		return Poll(), nil
	case op == OpDeliver && len(f) == 2 && f[1] == "all":
		return DeliverEverything(), nil
	case op == OpDeliver && len(f) == 3:
		var r, c int
		w := What(f[2])
		if n, err := fmt.Sscanf(f[1], "r%d.c%d", &r, &c); err != nil || n != 2 || fmt.Sprintf("r%d.c%d", r, c) != f[1] ||
			(w != DeliverHandles && w != DeliverComponent && w != DeliverAll) {
			return Step{}, bad
		}
		return Deliver(r, c, w), nil
	case op == OpAbort && len(f) == 2:
		var r int
		if n, err := fmt.Sscanf(f[1], "r%d", &r); err != nil || n != 1 || fmt.Sprintf("r%d", r) != f[1] {
			return Step{}, bad
		}
		return Abort(r), nil
	}
	return Step{}, bad
}

// StepList prints steps numbered from 1, at most max, e.g.
// "1 release h0.0.0 · 2 deliver r0.c0 all · 3 abort r1".
func StepList(steps []Step, max int) string {
	if len(steps) == 0 {
		return "(none: the harness drains at once)"
	}
	var parts []string
	for i, s := range steps {
		if i == max {
			parts = append(parts, fmt.Sprintf("…(%d more)", len(steps)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", i+1, s))
	}
	return strings.Join(parts, " · ")
}

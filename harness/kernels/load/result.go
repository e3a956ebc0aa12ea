package load

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/oracle"
)

// The load kind's violation kinds.
const (
	// ReadEarly: the consumer read a page whose bytes were not the load's
	// (or store's): poison, because its gate or the store's join did not
	// order the read after the copy; or a store's stale input, because the
	// store did not wait for the caller's write.
	ReadEarly oracle.Kind = "stale-read"
	// Overwrite: a load or store overwrote a page before a reader on
	// another stream had read it (write after read).
	Overwrite oracle.Kind = "overwrite-before-read"
	// FailedDone: a gate let the consumer read a layer whose load failed.
	FailedDone oracle.Kind = "failed-done"
	// Content: when everything had run, a page did not hold its bytes, or
	// bytes outside the case's pages changed.
	Content oracle.Kind = "content"
	// Deadlock: a stream operation could never run (on a GPU the stream
	// would hang).
	Deadlock oracle.Kind = "deadlock"
	// Spurious: a gate reported a failure though no copy failed.
	Spurious oracle.Kind = "spurious-failure"
	// Race: the happens-before checker found two operations on different
	// streams touching the same bytes, one writing, with nothing ordering
	// them: timing decides, whatever this run showed.
	Race oracle.Kind = "happens-before"
)

// Kinds are the load kind's violation kinds in report order: what the
// bytes showed first, then what the log shows whatever the timing.
var Kinds = []oracle.Kind{ReadEarly, Overwrite, FailedDone, Content, Deadlock, Spurious, Race}

// Violation is one broken ordering, located by layer, buffer and page,
// with the ordering edge that was missing when it is known.
type Violation struct {
	Kind   oracle.Kind `json:"kind"`
	Item   *Item       `json:"item,omitempty"`
	Detail string      `json:"detail"`
	// Edge is the missing ordering edge: from an operation on one stream
	// to one on another.
	Edge string `json:"edge,omitempty"`
	// Off and Len locate the first wrong bytes in the page (from its
	// start); Want and Got show at most oracle.MaxShown of them.
	Off  int    `json:"offset,omitempty"`
	Len  int    `json:"len,omitempty"`
	Want []byte `json:"want,omitempty"`
	Got  []byte `json:"got,omitempty"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", v.Kind)
	if v.Item != nil {
		fmt.Fprintf(&b, " %v", *v.Item)
	}
	fmt.Fprintf(&b, " %s", v.Detail)
	if v.Edge != "" {
		fmt.Fprintf(&b, "; missing edge %s", v.Edge)
	}
	return b.String()
}

// KindOf implements oracle.Typed.
func (v Violation) KindOf() oracle.Kind { return v.Kind }

// Generic is v in the form every kind's repro files hold.
func (v Violation) Generic() oracle.Violation {
	g := oracle.Violation{Kind: v.Kind, Row: oracle.NoRow, Off: v.Off, Len: v.Len, Want: v.Want, Got: v.Got, Detail: v.Detail}
	if v.Item != nil {
		g.Field, g.Page = v.Item.Buffer, int64(v.Item.Page)
		g.Detail = v.Item.String() + ": " + v.Detail
	}
	if v.Edge != "" {
		g.Detail += "; missing edge " + v.Edge
	}
	return g
}

// Result is the verdict on one case: its violations, the gates' answers,
// and how many stream operations the log held.
type Result struct {
	oracle.Found[Violation]
	Gates []GateAnswer `json:"gates,omitempty"`
	Ops   int          `json:"ops"`
	Held  int          `json:"held"` // operations that ran only after the release
}

// GateAnswer is one gate's answer to the consumer.
type GateAnswer struct {
	Layer  int    `json:"layer"`
	Buffer string `json:"buffer"`
	Error  string `json:"error,omitempty"`
}

// Primary is the kind a report leads with: the first in Kinds order.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }

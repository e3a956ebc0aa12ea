package sequence

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/oracle"
)

// The sequence kind's violation kinds.
const (
	// Ownership: a live page's slot holds bytes its owner never wrote
	// there: another request's row (a stale write, a replay of old slots,
	// a copy landing after the page changed hands) or anything else.
	Ownership oracle.Kind = "ownership"
	// SharedWrite: a prefix-shared page changed (its holders' bytes must
	// never change; a write needs a copy first).
	SharedWrite oracle.Kind = "shared-write"
	// Missing: a row the step stored is not in its slot.
	Missing oracle.Kind = "missing"
	// StaleRead: a read returned what a page held before its owner's
	// writes landed: the row of the request that held it before, or the
	// bytes it was taken with (its free fill): a stale page, or a page
	// read before the copy that fills it (its gate).
	StaleRead oracle.Kind = "stale-read"
	// ReadWrong: a read returned scores or an order the live pages do not
	// give, or slots outside the request's page table.
	ReadWrong oracle.Kind = "read"
	// Crash: the plugin failed a call: an error, a crash, a hang.
	Crash oracle.Kind = oracle.Crash
)

// Kinds are the violation kinds in report order.
var Kinds = []oracle.Kind{Ownership, SharedWrite, Missing, StaleRead, ReadWrong, Crash}

// Violation is one page found wrong after a step: where (step, layer,
// page, slot), whose page it is, and whose bytes it holds instead.
type Violation struct {
	Kind  oracle.Kind `json:"kind"`
	Step  int         `json:"step"`
	Layer int         `json:"layer"`
	Page  int         `json:"page"`
	Slot  int64       `json:"slot"`
	// Owner is the request the page belongs to now (0: shared pages name
	// their first holder); Since the step it was allocated, Epoch how many
	// allocations it has seen.
	Owner int `json:"owner"`
	Since int `json:"since"`
	Epoch int `json:"epoch"`
	// Holds says whose row the slot holds instead, when the bytes are a
	// row of this sequence; Former is the owner that row's page had, when
	// it was another request, and FormerUntil the step it left.
	Holds       string `json:"holds,omitempty"`
	Former      int    `json:"former,omitempty"`
	FormerUntil int    `json:"former_until,omitempty"`
	// Req is the request whose read returned the finding (read kinds).
	Req int `json:"req,omitempty"`
	// LastWrite is the step that last wrote the slot legally (-1: none
	// since the page was allocated).
	LastWrite int    `json:"last_write"`
	Detail    string `json:"detail"`
	Off       int    `json:"offset,omitempty"` // in the page
	Len       int    `json:"len,omitempty"`
	Want      []byte `json:"want,omitempty"`
	Got       []byte `json:"got,omitempty"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: step %d, layer %d, page %d slot %d: %s", v.Kind, v.Step, v.Layer, v.Page, v.Slot, v.Detail)
	return b.String()
}

// KindOf implements oracle.Typed.
func (v Violation) KindOf() oracle.Kind { return v.Kind }

// Generic is v as every kind's repro files hold violations.
func (v Violation) Generic() oracle.Violation {
	return oracle.Violation{Kind: v.Kind, Row: oracle.NoRow, Slot: v.Slot, Page: int64(v.Page), Field: fmt.Sprintf("L%d", v.Layer),
		Off: v.Off, Len: v.Len, Want: v.Want, Got: v.Got, Detail: fmt.Sprintf("step %d: %s", v.Step, v.Detail)}
}

// Result is the verdict on one sequence: the first failing step's
// violations, how many steps ran and how many page checks they took.
type Result struct {
	oracle.Found[Violation]
	Steps   int    `json:"steps"`   // steps run (through the first failing one)
	Checked int    `json:"checked"` // page digests compared
	Differ  int    `json:"differ"`  // pages fully diffed (their digest differed)
	Reads   int    `json:"reads"`   // read steps the plugin's read kernel ran
	Fault   string `json:"fault,omitempty"`
}

// Primary is the kind a report leads with.
func (r *Result) Primary() oracle.Kind { return oracle.First(Kinds, r.Has) }

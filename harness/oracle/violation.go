package oracle

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
)

// Kind classifies a violation. The string is what reports and repro files
// show.
type Kind string

// Violation kinds of a single call (see the package doc) and of the
// properties that compare calls.
const (
	Guard        Kind = "guard"
	Padding      Kind = "padding"
	Stride       Kind = "stride"
	Value        Kind = "value"
	Missing      Kind = "missing"
	Alias        Kind = "alias"
	Geometry     Kind = "geometry"     // declared bytes/token or page bytes differ from the layout
	Determinism  Kind = "determinism"  // the same case twice gave different bytes
	Differential Kind = "differential" // the padded run differs from the unpadded one
)

// MaxShown bounds the want/got bytes kept per violation.
const MaxShown = 32

// NoRow marks a violation no input row explains.
const NoRow = -1

// Violation is one run of wrong bytes with one explanation.
type Violation struct {
	Kind    Kind   `json:"kind"`
	Row     int    `json:"row"`  // input row, or NoRow
	Slot    int64  `json:"slot"` // owning or targeted slot
	Page    int64  `json:"page"` // page of Slot
	Field   string `json:"field,omitempty"`
	Off     int    `json:"offset"` // from the pool base; negative in the leading guard
	Len     int    `json:"len"`    // bytes in the run
	Want    []byte `json:"want"`   // at most MaxShown bytes from Off
	Got     []byte `json:"got"`
	Detail  string `json:"detail,omitempty"`
	HasSlot bool   `json:"-"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", v.Kind)
	if v.Row != NoRow {
		fmt.Fprintf(&b, " row %d", v.Row)
	}
	if v.HasSlot {
		fmt.Fprintf(&b, " slot %d (page %d)", v.Slot, v.Page)
	}
	if v.Field != "" {
		fmt.Fprintf(&b, " field %s", v.Field)
	}
	fmt.Fprintf(&b, " bytes [%d,%d) from pool base", v.Off, v.Off+v.Len)
	if v.Detail != "" {
		fmt.Fprintf(&b, ": %s", v.Detail)
	}
	return b.String()
}

// Declared is what a plugin says its code believes about a layout: its
// geometry, its fp8 arithmetic and the width of the slots it reads.
type Declared struct {
	BytesPerToken int
	PageBytes     int
	// Recipe is the fp8 recipe declared for the layout's e4m3 fields;
	// nil: the layout's own recipes hold.
	Recipe *layout.Recipe
	// SlotBits is the width of the slot indices a store reads: 64 or 32
	// (0 where nothing was declared, which means 64).
	SlotBits int
}

// FloorDiv divides rounding toward minus infinity, so that an offset
// before the pool base (a -1 slot) lands in page -1.
func FloorDiv(a, b int) (q, r int) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// Clip keeps at most MaxShown bytes of b: what a violation shows.
func Clip(b []byte) []byte {
	if len(b) > MaxShown {
		return b[:MaxShown]
	}
	return b
}

// First is the first kind of order that has reports: the kind a report
// leads with and shrinking keeps. Each kernel kind orders its own kinds.
func First(order []Kind, has func(Kind) bool) Kind {
	for _, k := range order {
		if has(k) {
			return k
		}
	}
	return ""
}

// HasKind reports whether a violation of kind k is among vs.
func HasKind(vs []Violation, k Kind) bool {
	for _, v := range vs {
		if v.Kind == k {
			return true
		}
	}
	return false
}

// MergeGap is how many correct bytes may separate two wrong ones of the
// same run: a byte that happens to equal its expected value by chance does
// not split one violation into two.
const MergeGap = 16

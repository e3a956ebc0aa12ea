package oracle

import (
	"fmt"
	"strings"
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

// Kinds lists every kind in report order.
var Kinds = []Kind{Padding, Guard, Stride, Alias, Value, Missing, Geometry, Determinism, Differential}

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

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

// Kinds of a call that went wrong other than in the pool's bytes: they
// belong to every kernel kind.
const (
	Staging   Kind = "staging"   // the kernel wrote into its read-only inputs
	Crash     Kind = "crash"     // the plugin's process died running the case
	Sanitizer Kind = "sanitizer" // compute-sanitizer reported an error in the kernel
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

	// Tie is a second kind that explains the same bytes as well as Kind
	// does: the bytes are too few to tell, or two explanations write the
	// same ones. Reports say "value or padding: both fit" rather than
	// pick one silently.
	Tie Kind `json:"tie,omitempty"`
	// Values are the run's first elements read as the numbers they
	// encode (bf16, e4m3 times its scale, a float32 scale), where the
	// kind knows the field's format.
	Values *Values `json:"values,omitempty"`
	// Race is set when the bytes are one of two writers of one slot in
	// one call: which write lands last the kernel leaves to chance (a GPU
	// decides it each run), so the bytes show the bug in some runs only,
	// and the report names it a race rather than hedge between kinds.
	Race *Race `json:"race,omitempty"`
}

// Race is two rows of one call that write the same slot.
type Race struct {
	Slot int64 `json:"slot"`
	// Won is the row whose bytes the slot holds (it wrote last), Lost the
	// other writer.
	Won  int    `json:"won"`
	Lost int    `json:"lost"`
	Note string `json:"note"` // the two writers in words: "padded row 7 and valid row 1"
}

// KindText is the violation's kind as reports print it: "padding (race)"
// for a race.
func (v Violation) KindText() string {
	if v.Race != nil {
		return string(v.Kind) + " (race)"
	}
	return string(v.Kind)
}

// Values are the first elements of a violation's bytes, decoded, want
// beside got. They are strings (%.4g, "NaN", "+Inf") because a NaN has no
// JSON number.
type Values struct {
	Field  string   `json:"field"`
	Format string   `json:"format"`          // "bf16", "e4m3", "f32", "ue8m0"
	Scale  []string `json:"scale,omitempty"` // e4m3: the scale each side is read with, want then got
	Want   []string `json:"want"`
	Got    []string `json:"got"`
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", v.KindText())
	if v.Row != NoRow {
		fmt.Fprintf(&b, " row %d", v.Row)
	}
	if v.HasSlot {
		fmt.Fprintf(&b, " slot %d (page %d)", v.Slot, v.Page)
	}
	if v.Field != "" {
		fmt.Fprintf(&b, " field %s", v.Field)
	}
	switch {
	case v.Kind == Staging:
		fmt.Fprintf(&b, " bytes [%d,%d) of the staged input", v.Off, v.Off+v.Len)
	case v.Len > 0 || v.HasSlot: // a crash or a sanitizer's finding has no bytes of its own
		fmt.Fprintf(&b, " bytes [%d,%d) from pool base", v.Off, v.Off+v.Len)
	}
	if v.Tie != "" {
		fmt.Fprintf(&b, " (%s or %s: both fit)", v.Kind, v.Tie)
	}
	if v.Detail != "" {
		if b.Len() == len(v.KindText())+1 { // nothing but the kind so far
			fmt.Fprintf(&b, " %s", v.Detail)
		} else {
			fmt.Fprintf(&b, ": %s", v.Detail)
		}
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
	// PadPolicy is what the kernel declares it leaves in pad bytes, over
	// the layout's policy; "" where it declared none.
	PadPolicy layout.PadPolicy
}

// Clip keeps at most MaxShown bytes of b: what a violation shows.
func Clip(b []byte) []byte {
	if len(b) > MaxShown {
		return b[:MaxShown]
	}
	return b
}

// FirstDiff is the first index where a and b differ (the shorter's length
// when one is a prefix of the other), -1 when they are equal: where a
// violation's bytes start.
func FirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
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

package store

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvharness/kvharness/harness/workload"
)

// MaxCapacity bounds a store batch.
const MaxCapacity = 1 << 20

// Case is one store-kernel call: Loc and Rows have one entry per row of
// the captured batch (the capacity); the first Valid rows are real.
type Case struct {
	Padding Padding        `json:"padding"`
	Valid   int            `json:"valid"`
	Loc     []int64        `json:"loc"`
	Rows    []workload.Row `json:"rows"`
}

// Capacity is the batch size the call was captured for.
func (s *Case) Capacity() int { return len(s.Loc) }

// Clone returns a deep copy.
func (s *Case) Clone() *Case {
	c := *s
	c.Loc = append([]int64(nil), s.Loc...)
	c.Rows = append([]workload.Row(nil), s.Rows...)
	return &c
}

// Unpadded returns the same call with only the valid rows: what a correct
// kernel's padded run must be byte-identical to.
func (s *Case) Unpadded() *Case {
	return &Case{Padding: PadNone, Valid: s.Valid, Loc: s.Loc[:s.Valid:s.Valid], Rows: s.Rows[:s.Valid:s.Valid]}
}

// Validate checks a case against a pool of slots, so that a hand-edited or
// corrupt repro file fails with a reason instead of confusing the oracle.
func (s *Case) Validate(slots int) error {
	c := s.Capacity()
	switch {
	case c < 1 || c > MaxCapacity:
		return fmt.Errorf("capacity %d: want 1..%d", c, MaxCapacity)
	case len(s.Rows) != c:
		return fmt.Errorf("%d rows for %d loc entries", len(s.Rows), c)
	case s.Valid < 0 || s.Valid > c:
		return fmt.Errorf("valid count %d outside 0..%d", s.Valid, c)
	case s.Padding == PadNone && s.Valid != c:
		return fmt.Errorf("padding none but only %d of %d rows valid", s.Valid, c)
	case s.Padding < PadNone || s.Padding > PadMinus1:
		return fmt.Errorf("unknown padding %d", s.Padding)
	}
	seen := make(map[int64]bool, s.Valid)
	for i, slot := range s.Loc[:s.Valid] {
		lo := int64(0)
		if s.Padding == PadSink {
			lo = 1 // slot 0 is the sink; no request owns it
		}
		if slot < lo || slot >= int64(slots) {
			return fmt.Errorf("row %d: valid slot %d outside %d..%d", i, slot, lo, slots-1)
		}
		if seen[slot] {
			return fmt.Errorf("row %d: slot %d already taken by an earlier valid row", i, slot)
		}
		seen[slot] = true
		if s.Rows[i].Kind == workload.RowGarbage {
			return fmt.Errorf("row %d: valid rows hold a value class, not garbage", i)
		}
	}
	for i := s.Valid; i < c; i++ {
		if err := s.checkPadded(i, slots); err != nil {
			return err
		}
	}
	return nil
}

func (s *Case) checkPadded(i, slots int) error {
	slot := s.Loc[i]
	switch s.Padding {
	case PadSink, PadMinus1:
		if slot != s.Padding.Canonical() {
			return fmt.Errorf("row %d: %s padding must hold %d, not %d", i, s.Padding, s.Padding.Canonical(), slot)
		}
	case PadCount:
		if slot < 0 || slot >= int64(slots) {
			return fmt.Errorf("row %d: stale slot %d outside 0..%d", i, slot, slots-1)
		}
	}
	return nil
}

// String is a one-line summary, e.g. "C=2 n=1 count loc=[5 0]".
func (s *Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "C=%d n=%d %s loc=", s.Capacity(), s.Valid, s.Padding)
	if len(s.Loc) <= 16 {
		fmt.Fprint(&b, s.Loc)
	} else {
		fmt.Fprintf(&b, "%v…(%d more)", s.Loc[:16], len(s.Loc)-16)
	}
	return b.String()
}

// Kernel implements Case.
func (s *Case) Kernel() string { return "store" }

// Describe implements Case: the rows, valid then padded, at most 8.
func (s *Case) Describe(w io.Writer, indent string) {
	fmt.Fprintf(w, "%s%v\n", indent, s)
	const maxRows = 8
	for i := range min(s.Capacity(), maxRows) {
		role := "valid "
		if i >= s.Valid {
			role = "padded"
		}
		fmt.Fprintf(w, "%s  row %-3d %s loc %-6d %s seed %d\n", indent, i, role, s.Loc[i], s.Rows[i].Kind, s.Rows[i].Seed)
	}
	if s.Capacity() > maxRows {
		fmt.Fprintf(w, "%s  … %d more rows in the repro file\n", indent, s.Capacity()-maxRows)
	}
}

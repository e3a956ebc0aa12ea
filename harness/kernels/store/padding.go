package store

import (
	"fmt"
	"strings"
)

// Padding is how padded rows of a store batch mark themselves.
type Padding int

// The padding conventions of the engines kvharness models.
const (
	PadNone   Padding = iota // every row is valid
	PadCount                 // padded rows hold stale slots; the kernel is told n
	PadSink                  // padded rows hold slot 0, reserved and never written
	PadMinus1                // padded rows hold -1, before the pool's base
	// PadTable is page-table addressing's own convention (pagetable.go):
	// a padded row's position lies outside its request. It is not a slot
	// list's, so not in Paddings: --addressing page-table picks it.
	PadTable
)

// Paddings lists every convention of slot lists, in flag order.
var Paddings = []Padding{PadNone, PadCount, PadSink, PadMinus1}

var padNames = []string{"none", "count", "sink", "minus1", "page-table"}

func (p Padding) String() string {
	if p >= 0 && int(p) < len(padNames) {
		return padNames[p]
	}
	return fmt.Sprintf("padding(%d)", int(p))
}

// ParsePadding reads a convention name.
func ParsePadding(s string) (Padding, error) {
	for i, n := range padNames {
		if s == n {
			return Padding(i), nil
		}
	}
	return 0, fmt.Errorf("unknown padding %q (want %s)", s, strings.Join(padNames, ", "))
}

// MarshalText implements encoding.TextMarshaler.
func (p Padding) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Padding) UnmarshalText(b []byte) error {
	v, err := ParsePadding(string(b))
	*p = v
	return err
}

// Canonical is the loc value a padded row holds in its simplest form.
func (p Padding) Canonical() int64 {
	if p == PadMinus1 {
		return -1
	}
	return 0
}

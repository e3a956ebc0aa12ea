package store

import (
	"bytes"
	"strconv"
	"unsafe"

	"github.com/kvharness/kvharness/harness/oracle"
)

// Staging. Each pool set has a staging region of its own: the rows of the
// largest batch, then its slots, each rounded up to the pool alignment. A
// store call reads the first Capacity rows and slots of it and may write
// none of it; nor may it write past them, into the rows and slots the
// batch does not use or the gaps between. The target keeps a copy of what
// each set's region must hold (stagedSet: whatever the harness staged
// there last, case after case) and compares the whole region after every
// call: a kernel that writes a few bytes past its rows is caught on the
// case that did it, not when a larger batch reads them.

// stagedSet is what one set's staging region must hold.
type stagedSet struct {
	want     []byte // the region, as the harness left it
	capacity int    // rows and slots the last case staged
	slotW    int    // bytes per staged slot
}

// stage writes rows and loc into set's staging, keeping what the whole
// region must now hold for checkStaging.
func (t *Target) stage(set int, c *Case, rows [][]uint16) error {
	s := t.stagedFor(set)
	rb := t.Layout.RowBytes()
	r := s.want[:c.Capacity()*rb]
	for i, row := range rows[:c.Capacity()] {
		copy(r[i*rb:], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(row))), rb))
	}
	locAt := t.rowsBytes()
	loc := putSlotsInto(s.want[locAt:locAt+8*t.MaxCapacity], stagedLoc(c), t.Declared.SlotBits) // at the declared width (slots.go)
	s.capacity, s.slotW = c.Capacity(), slotWidth(t.Declared.SlotBits)
	if err := t.Mem().WriteAt(r, t.rowsOffset(set)); err != nil {
		return err
	}
	return t.Mem().WriteAt(loc, t.locOffset(set))
}

// stagedLoc is the slots staged for c: its Loc, or, for a case addressed
// by page table, -1 for every row: such a kernel is told where rows go by
// the table alone.
func stagedLoc(c *Case) []int64 {
	if c.Table == nil {
		return c.Loc
	}
	out := make([]int64, len(c.Loc))
	for i := range out {
		out[i] = -1
	}
	return out
}

// stagedFor is set's staging copy, made (zeros, as the region starts) on
// first use.
func (t *Target) stagedFor(set int) *stagedSet {
	if t.staging == nil {
		t.staging = make([]*stagedSet, t.numSets())
	}
	if t.staging[set] == nil {
		t.staging[set] = &stagedSet{want: make([]byte, t.slotBytes())}
	}
	return t.staging[set]
}

// checkStaging reads set's whole staging region back: a store kernel must
// leave it as staged. Each run of bytes it changed is a staging violation,
// shown with its bytes like any other, and the region is put back, so
// that what a kernel scribbled past its rows fails its own case only.
func (t *Target) checkStaging(set int) ([]oracle.Violation, error) {
	s := t.stagedFor(set)
	off := t.rowsOffset(set)
	var got []byte
	if mapped, ok := t.Mem().(interface{ Bytes() []byte }); ok {
		got = mapped.Bytes()[off : off+len(s.want)]
	} else {
		got = make([]byte, len(s.want))
		if err := t.Mem().ReadAt(got, off); err != nil {
			return nil, err
		}
	}
	if bytes.Equal(got, s.want) {
		return nil, nil
	}
	// The violations keep their bytes: got may be the mapped arena, and
	// want is staged over by the next case.
	out := t.stagingRuns(s, bytes.Clone(s.want), bytes.Clone(got))
	return out, t.Mem().WriteAt(s.want, off)
}

// stagingRuns are the runs of the region whose bytes changed, each named
// by the part of the region it starts in.
func (t *Target) stagingRuns(s *stagedSet, want, got []byte) []oracle.Violation {
	var out []oracle.Violation
	for i := 0; i < len(want); i++ {
		if want[i] == got[i] {
			continue
		}
		if n := len(out); n > 0 && i-(out[n-1].Off+out[n-1].Len) <= oracle.MergeGap && t.part(s, i) == t.part(s, out[n-1].Off) {
			out[n-1].Len = i + 1 - out[n-1].Off
			continue
		}
		v := oracle.Violation{Kind: oracle.Staging, Row: oracle.NoRow, Off: i, Len: 1}
		v.Field, v.Detail = t.part(s, i), "the kernel wrote into its read-only input: a store may write only its pool"
		switch rb, locAt := t.Layout.RowBytes(), t.rowsBytes(); {
		case i < s.capacity*rb:
			v.Row = i / rb
		case i < locAt:
			v.Detail = "the kernel wrote past the rows of its batch (" + strconv.Itoa(s.capacity) +
				"), into staging the call does not use: memory its caller holds"
		case i < locAt+s.capacity*s.slotW:
			v.Row = (i - locAt) / s.slotW
		default:
			v.Detail = "the kernel wrote past the slots of its batch (" + strconv.Itoa(s.capacity) +
				"), into staging the call does not use: memory its caller holds"
		}
		out = append(out, v)
	}
	for k := range out {
		v := &out[k]
		v.Want, v.Got = oracle.Clip(want[v.Off:v.Off+v.Len]), oracle.Clip(got[v.Off:v.Off+v.Len])
	}
	return out
}

// part names the part of a set's staging region offset i lies in.
func (t *Target) part(s *stagedSet, i int) string {
	rb, locAt := t.Layout.RowBytes(), t.rowsBytes()
	switch {
	case i < s.capacity*rb:
		return "rows"
	case i < locAt:
		return "rows past the batch"
	case i < locAt+s.capacity*s.slotW:
		return "loc"
	}
	return "loc past the batch"
}

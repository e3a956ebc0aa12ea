package workload

import "testing"

// TestSlot: each rule's slot, an even page's edge its first slot, an odd
// one's its last, the stream's pick wrapping into the pages there are.
func TestSlot(t *testing.T) {
	for _, tc := range []struct {
		rule   byte
		data   []byte
		chosen []int64
		want   int64
	}{
		{ChoiceLowest, nil, nil, 1},
		{ChoiceLast, nil, nil, 99},
		{ChoiceEdge, []byte{2, 0}, nil, 20},
		{ChoiceEdge, []byte{3, 0}, nil, 39},
		{ChoiceEdge, []byte{15, 0}, nil, 59}, // page 15 of 10: page 5
		{ChoiceNeighbour, nil, []int64{7, 40}, 41},
		{ChoiceNeighbour, nil, nil, 1},
		{ChoiceRaw, []byte{0x34, 0x12, 0, 0}, nil, 0x1234},
	} {
		if got := NewStream(tc.data).Slot(tc.rule, 100, 10, 1, tc.chosen); got != tc.want {
			t.Errorf("rule %d on % x after %v over 100 slots in pages of 10 = %d, want %d", tc.rule, tc.data, tc.chosen, got, tc.want)
		}
	}
}

// TestNames: a kind's name reads back as the kind; a number past the names
// prints as one, and an unknown name is an error that leaves the kind.
func TestNames(t *testing.T) {
	for k := RowZero; k <= RowNonFinite; k++ {
		text, _ := k.MarshalText()
		var back RowKind
		if err := back.UnmarshalText(text); err != nil || back != k {
			t.Errorf("%v reads back as %v, %v", k, back, err)
		}
	}
	if s := RowKind(99).String(); s != "rowkind(99)" {
		t.Errorf("RowKind(99) = %q", s)
	}
	k := RowTiny
	if err := k.UnmarshalText([]byte("huge")); err == nil || err.Error() != `unknown row kind "huge"` || k != RowTiny {
		t.Errorf("an unknown name: %v, kind %v", err, k)
	}
}

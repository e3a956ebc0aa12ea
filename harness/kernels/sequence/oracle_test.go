package sequence

import (
	"slices"
	"strings"
	"testing"
)

// TestShadowNamesTheFormerOwner: a page freed by r1 and reallocated to
// r2, holding r1's row where r2 wrote its own, is an ownership violation
// naming r2 as owner, r1 as the former owner with the step it left, and
// the step that last wrote the slot legally; a shared page that changes
// is a shared-write; a slot written this step that holds unknown bytes is
// missing.
func TestShadowNamesTheFormerOwner(t *testing.T) {
	g := Geometry{HeadDims: []int{8}, PageSize: 2, Pages: 4, Capacities: []int{1}}
	tok := 16
	sh := newShadow(g, []int{2 * tok})
	row := func(k rowKey) []byte { b := make([]byte, tok); rowBytes(b, 7, 0, k); return b }
	blank := [][]byte{make([]byte, 2*tok)}

	sh.allocate(1, 1, 0, [][]byte{slices.Clone(blank[0])}) // step 0: r1 takes page 1
	r1 := rowKey{1, 0}
	sh.wrote(write{Slot: 2, Page: 1, Req: 1, Key: r1}, 0, [][]byte{row(r1)})
	sh.seal([]int{1})
	sh.release(1, 1)                                                   // step 1: r1 leaves
	sh.allocate(1, 2, 2, [][]byte{append(row(r1), blank[0][tok:]...)}) // step 2: r2 takes it as it is
	r2 := rowKey{2, 0}
	sh.wrote(write{Slot: 2, Page: 1, Req: 2, Key: r2}, 3, [][]byte{row(r2)})
	sh.seal([]int{1})

	got := append(row(r1), blank[0][tok:]...) // r1's row is back in slot 2
	v := sh.diff(4, 0, 1, got, nil)
	if v.Kind != Ownership || v.Owner != 2 || v.Since != 2 || v.Epoch != 2 || v.Former != 1 || v.FormerUntil != 1 ||
		v.LastWrite != 3 || v.Slot != 2 || v.Holds != "r1 token 0" || v.Off != 0 {
		t.Fatalf("%+v", v)
	}
	if !strings.Contains(v.Detail, "r1 held this page from step 0 until step 1") {
		t.Errorf("detail %q", v.Detail)
	}

	v = sh.diff(4, 0, 1, append(slices.Clone(blank[0][:tok]), blank[0][tok:]...), map[int64]bool{2: true})
	if v.Kind != Missing {
		t.Errorf("unknown bytes in a slot written this step: %v", v.Kind)
	}
	sh.share(1)
	if v = sh.diff(4, 0, 1, got, nil); v.Kind != SharedWrite {
		t.Errorf("a shared page changed: %v", v.Kind)
	}
}

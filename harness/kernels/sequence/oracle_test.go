package sequence

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/sdk"
	sdkstore "github.com/kvharness/kvharness/harness/sdk/store"
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

	v = sh.diff(4, 0, 1, append(slices.Clone(blank[0][:tok]), blank[0][tok:]...), map[int64]rowKey{2: r2})
	if v.Kind != Missing {
		t.Errorf("unknown bytes in a slot written this step: %v", v.Kind)
	}
	sh.share(1)
	if v = sh.diff(4, 0, 1, got, nil); v.Kind != SharedWrite {
		t.Errorf("a shared page changed: %v", v.Kind)
	}
}

// echo is a bf16 store that, on every call after the first, stores the
// first call's rows into the first call's slots again: a duplicated
// block id, a copy replayed late. Between a free and the next allocation
// its echo lands in a free page.
type echo struct {
	rows []uint16
	loc  []int64
}

func (e *echo) Store(_ context.Context, c *sdkstore.Call) error {
	d := c.Pool.Layout.HeadDim
	put := func(rows []uint16, loc []int64, n int) {
		for i := range n {
			for j, e := range rows[i*d : (i+1)*d] {
				binary.LittleEndian.PutUint16(c.Arena[c.Pool.Base+int(loc[i])*2*d+2*j:], e)
			}
		}
	}
	put(c.Rows, c.Loc, c.Valid)
	if c.Pool.Name == "L0" {
		if e.loc == nil && c.Valid > 0 {
			e.rows, e.loc = slices.Clone(c.Rows[:c.Valid*d]), slices.Clone(c.Loc[:c.Valid])
		} else if e.loc != nil {
			put(e.rows, e.loc, len(e.loc))
		}
	}
	return nil
}

// TestWriteWhileFree: a write landing in a page after its last holder
// left is seen when the page is taken again (it was filled with poison),
// naming the holder that left and the step.
func TestWriteWhileFree(t *testing.T) {
	p := plugin.InProcess("echo", sdk.Services(sdk.Plugin{Name: "echo", Version: "0", Kernel: &echo{}, Kinds: []sdk.Kind{sdkstore.Kind},
		Geometry: func(_ string, d, p int) []sdk.Geometry {
			return []sdk.Geometry{{Layout: "bf16", BytesPerToken: 2 * d, BytesPerPage: 2 * d * p}}
		}}))
	g := Geometry{HeadDims: []int{16}, PageSize: 4, Pages: 8, Capacities: []int{1}}
	sys := NewSystem(p, plugintest.Dir(t), Config{Backend: arena.SHM{}, Geometry: g, Seed: 1}, nil)
	defer sys.Close(context.Background())
	c := &Case{Geometry: g, Steps: []Step{arrive(1, 1), arrive(2, 1), op(OpFinish, 1), decode(2), arrive(3, 1)}}
	r, err := sys.Check(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed() {
		t.Fatal("the echo into a free page passed")
	}
	v := r.Violations[0]
	if v.Kind != Ownership || v.Step != 4 || v.Page != 1 || v.Former != 1 || v.FormerUntil != 2 || v.Holds != "r1 token 0" ||
		!strings.Contains(v.Detail, "written while the page was free") {
		t.Fatalf("%+v", v)
	}
	t.Log(v)
}

// TestPortableDigest: pageDigest (the device kernel's function) changes
// with any word's value and with two words' order, and a check that
// digests with it judges as the process's hash does: the control passes,
// the incident fails at the same step and page.
func TestPortableDigest(t *testing.T) {
	page := make([]byte, 256)
	for i := range page {
		page[i] = byte(i * 7)
	}
	base := pageDigest(page)
	flip := slices.Clone(page)
	flip[200] ^= 1
	swap := slices.Clone(page)
	copy(swap[0:8], page[8:16])
	copy(swap[8:16], page[0:8])
	if pageDigest(flip) == base || pageDigest(swap) == base {
		t.Fatalf("digest blind to a flipped bit or two swapped words: %#x %#x %#x", base, pageDigest(flip), pageDigest(swap))
	}
	c := fuzzSeeds[0].Case() // the incident
	var got []Violation
	for _, portable := range []bool{false, true} {
		for _, name := range []string{"fusedstore", "bf16scatter"} {
			sys := NewSystem(bundled(t, name), plugintest.Dir(t), Config{Backend: arena.SHM{}, Geometry: c.Geometry, Seed: 1, PortableDigest: portable}, nil)
			r, err := sys.Check(context.Background(), c)
			sys.Close(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r.Failed() != (name == "bf16scatter") {
				t.Fatalf("%s, portable %v: failed %v", name, portable, r.Failed())
			}
			if r.Failed() {
				got = append(got, r.Violations[0])
			}
		}
	}
	if a, b := got[0], got[1]; a.Step != b.Step || a.Page != b.Page || a.Slot != b.Slot || a.Kind != b.Kind {
		t.Fatalf("the two digests judge apart: %v / %v", a, b)
	}
}

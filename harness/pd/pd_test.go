package pd

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/pool"
)

// pools is buffer 0 of DefaultGeometry(1, 8), planned on both sides.
func pools(t *testing.T) BufferPools {
	t.Helper()
	g := DefaultGeometry(1, 8)
	l, err := g.Layout(0)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pool.Plan([]pool.Spec{{Name: "src", Layout: l, Slots: 8 * g.PageSize}, {Name: "dst", Layout: l, Slots: 8 * g.PageSize}}, pool.Alignment)
	if err != nil {
		t.Fatal(err)
	}
	return BufferPools{Name: "L0.kv", Layout: "bf16", PageBytes: l.PageBytes(), Pages: 8, Src: plan.Regions[0], Dst: plan.Regions[1]}
}

func TestVetCopy(t *testing.T) {
	b := pools(t)
	n := b.PageBytes
	where := func(side string, off int) string { return side + "?" }
	good := Descriptor{Src: b.PageOff(SideSrc, 2), Dst: b.PageOff(SideDst, 5), Length: 2 * n, ItemLen: n, Run: 2}
	if p, s, d := VetCopy(good, b, where); len(p) > 0 || s != 2 || d != 5 {
		t.Errorf("a good copy: %v, pages %d → %d", p, s, d)
	}
	for _, tc := range []struct {
		edit func(*Descriptor)
		says string
	}{
		{func(d *Descriptor) { d.Run = 0 }, "run 0"},
		{func(d *Descriptor) { d.Length = n }, "length"},
		{func(d *Descriptor) { d.ItemLen, d.Length = n/2, n }, "item_len"},
		{func(d *Descriptor) { d.Dst += 8 }, "not on a page boundary"},
		{func(d *Descriptor) { d.Dst = b.PageOff(SideDst, 7) }, "not inside L0.kv's dst pages"},
		{func(d *Descriptor) { d.Src = 0 }, "(it starts in src?)"},
	} {
		d := good
		tc.edit(&d)
		if p, _, _ := VetCopy(d, b, where); !strings.Contains(strings.Join(p, "; "), tc.says) {
			t.Errorf("%v: %v; want a problem saying %q", d, p, tc.says)
		}
	}
	if !ProductIs(3, 4, 12) || ProductIs(3, 4, 13) || ProductIs(-1, 1, -1) || ProductIs(1, 0, 0) {
		t.Error("ProductIs")
	}
}

func TestPageListAndDigests(t *testing.T) {
	if got := PageList([]int64{3, 4, 5, 9, 1, 2}, 2); got != "[3..5 9 …(2 more)]" {
		t.Errorf("PageList: %s", got)
	}
	d := NewDigester(0, 7, "L0.kv", 2)
	d.Add([]byte("ab"), []byte("ab"))
	d.Add([]byte("cd"), []byte("cx"))
	rd := d.Done()
	if rd.Match() || rd.Src != hex.EncodeToString(Digest([]byte("ab"), []byte("cd"))) || DigestsMatch([]RoomDigest{rd}) {
		t.Errorf("digests %+v", rd)
	}
}

func TestViolationLine(t *testing.T) {
	if got := WhereRoom(0, 7); len(got) != 1 || got[0] != "room 0 (id 7)" {
		t.Errorf("WhereRoom(0, 7) = %q", got)
	}
	if got := WhereRoom(-1, 7); got != nil {
		t.Errorf("WhereRoom(-1, 7) = %q, want nothing", got)
	}
	if got, want := ViolationLine("bytes: room 0", 64, 8, "differs"), "bytes: room 0 bytes [64,72) from the pool base: differs"; got != want {
		t.Errorf("ViolationLine = %q, want %q", got, want)
	}
	if got, want := ViolationLine("liveness", 0, 0, "never ended"), "liveness: never ended"; got != want {
		t.Errorf("ViolationLine without bytes = %q, want %q", got, want)
	}
}

// TestSizedGeometry: the flags' page size and head dimension reach every
// buffer, and a geometry they make invalid is an error naming the kernel.
func TestSizedGeometry(t *testing.T) {
	g, err := SizedGeometry("transfer", 2, 8, 32, 64)
	if err != nil || g.Pages != 8 || g.PageSize != 32 || len(g.Buffers) != 6 {
		t.Fatalf("SizedGeometry = %v, %v; want 2 layers of 8 pages of 32 tokens", g, err)
	}
	for _, b := range g.Buffers {
		if b.HeadDim != 64 {
			t.Errorf("buffer %s: head dimension %d, want 64", b.Name, b.HeadDim)
		}
	}
	if _, err := SizedGeometry("pdasync", 1, 8, 0, 64); err == nil || !strings.HasPrefix(err.Error(), "pdasync geometry: ") {
		t.Errorf("page size 0: %v; want a pdasync geometry error", err)
	}
}

// TestSuiteGeometry: an empty geometry becomes the default of the given
// size, a given one is kept as it is, and the layout returned is the first
// buffer's (the KV's bf16 layout in the default; a bad one is an error).
func TestSuiteGeometry(t *testing.T) {
	g, l, err := SuiteGeometry(Geometry{}, 2, 12)
	if err != nil || g.Pages != 12 || len(g.Buffers) != 6 || l.Name != "bf16" {
		t.Fatalf("SuiteGeometry(empty, 2, 12) = %d pages, %d buffers, layout %v, %v; want 12 pages, 6 buffers, bf16",
			g.Pages, len(g.Buffers), l, err)
	}
	own := DefaultGeometry(1, 8)
	own.Buffers = own.Buffers[2:] // the index-K buffer first
	g, l, err = SuiteGeometry(own, 2, 12)
	if err != nil || g.Pages != 8 || len(g.Buffers) != 1 || l.Name != "fp8-paged" {
		t.Fatalf("SuiteGeometry(own) = %d pages, %d buffers, layout %v, %v; want the geometry given, fp8-paged", g.Pages, len(g.Buffers), l, err)
	}
	own.Buffers[0].Layout = "no-such-layout"
	if _, _, err := SuiteGeometry(own, 2, 12); err == nil {
		t.Error("a first buffer of an unknown layout: no error")
	}
}

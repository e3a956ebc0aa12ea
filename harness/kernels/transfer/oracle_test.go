package transfer

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
)

// tfix is a transfer arena in plain memory: a test plays the plugin by
// choosing descriptors and copying bytes itself, then hands the oracle the
// deltas, as check does after a real run.
type tfix struct {
	t    *testing.T
	g    pd.Geometry
	c    *Case
	bufs []pd.BufferPools
	mem  []byte
	bg   []byte
	regs []pool.Region
}

// oneRoomFix is a fixture of one layer of 40 pages and one room, id 7,
// moving source page 3 to destination page 10.
func oneRoomFix(t *testing.T) *tfix {
	t.Helper()
	return newTFix(t, 1, 40, room(7, []int64{3}, []int64{10}))
}

// copiedFix is oneRoomFix after a correct transfer: its descriptors, their
// copies made.
func copiedFix(t *testing.T) (*tfix, []pd.Descriptor) {
	t.Helper()
	f := oneRoomFix(t)
	ds := f.runs()
	f.copy(ds)
	return f, ds
}

func newTFix(t *testing.T, layers, pages int, rooms ...Room) *tfix {
	t.Helper()
	g := pd.DefaultGeometry(layers, pages)
	f := &tfix{t: t, g: g, c: &Case{Geometry: g, Rooms: rooms}}
	if err := f.c.Validate(0); err != nil {
		t.Fatal(err)
	}
	var specs []pool.Spec
	for _, side := range []string{pd.SideSrc, pd.SideDst} {
		for i, b := range g.Buffers {
			l, err := g.Layout(i)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, b.Pool(side, l, pages*g.PageSize))
		}
	}
	plan, err := pool.Plan(specs, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.regs, f.mem = plan.Regions, make([]byte, plan.Size)
	for i, r := range plan.Regions {
		pool.FillBackground(f.mem[r.Span().Off:r.Span().End()], uint64(1000+i), 0)
	}
	f.bg = slices.Clone(f.mem)
	n := len(g.Buffers)
	for i, b := range g.Buffers {
		l, _ := g.Layout(i)
		f.bufs = append(f.bufs, pd.BufferPools{Name: b.Name, Layout: b.Layout, Alloc: b.AllocKey(), PageBytes: l.PageBytes(),
			Pages: pages, Shift: b.Shift, Src: plan.Regions[i], Dst: plan.Regions[n+i],
			SrcSeed: uint64(1000 + i), DstSeed: uint64(1000 + n + i)})
	}
	return f
}

func room(id uint64, src, dst []int64) Room {
	return Room{ID: id, Src: src, Dst: dst}
}

// runs builds the descriptors a correct engine builds: per buffer, per
// maximal run of pages contiguous on both sides.
func (f *tfix) runs() []pd.Descriptor {
	var out []pd.Descriptor
	for b, buf := range f.bufs {
		for _, r := range f.c.Rooms {
			for i := 0; i < len(r.Src); {
				n := 1
				for i+n < len(r.Src) && buf.Phys(r.Src[i+n]) == buf.Phys(r.Src[i])+int64(n) && buf.Phys(r.Dst[i+n]) == buf.Phys(r.Dst[i])+int64(n) {
					n++
				}
				out = append(out, f.desc(r.ID, b, buf.Phys(r.Src[i]), buf.Phys(r.Dst[i]), n))
				i += n
			}
		}
	}
	return out
}

func (f *tfix) desc(room uint64, b int, src, dst int64, run int) pd.Descriptor {
	buf := f.bufs[b]
	pb := buf.PageBytes
	return pd.Descriptor{Room: room, Buffer: b, Src: buf.Src.Pool.Off + int(src)*pb, Dst: buf.Dst.Pool.Off + int(dst)*pb,
		Length: pb * run, ItemLen: pb, Run: run}
}

func (f *tfix) copy(ds []pd.Descriptor) {
	for _, d := range ds {
		copy(f.mem[d.Dst:d.Dst+d.Length], f.mem[d.Src:d.Src+d.Length])
	}
}

// check copies what ds say, then judges the arena.
func (f *tfix) check(ds []pd.Descriptor) *Findings {
	f.copy(ds)
	return f.judge(ds)
}

func (f *tfix) judge(ds []pd.Descriptor) *Findings {
	var src, dst []oracle.Delta
	for _, b := range f.bufs {
		src, dst = append(src, f.delta(b.Src)), append(dst, f.delta(b.Dst))
	}
	return NewOracle(f.bufs, f.c).Check(ds, src, dst)
}

func (f *tfix) delta(r pool.Region) oracle.Delta {
	return kindtest.Delta(f.mem, f.bg, r.Span(), r.Pool.Off)
}

// kinds lists the distinct kinds of vs in order.
func kinds(vs []Violation) []oracle.Kind {
	var out []oracle.Kind
	for _, v := range vs {
		if !slices.Contains(out, v.Kind) {
			out = append(out, v.Kind)
		}
	}
	return out
}

func first(t *testing.T, vs []Violation, k oracle.Kind) Violation {
	t.Helper()
	for _, v := range vs {
		if v.Kind == k {
			return v
		}
	}
	t.Fatalf("no %s violation in %v", k, vs)
	return Violation{}
}

func wantKinds(t *testing.T, o *Findings, want ...oracle.Kind) {
	t.Helper()
	if got := kinds(o.Violations); !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v:\n%s", got, want, dump(o.Violations))
	}
}

func dump(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}

func says(t *testing.T, v Violation, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(v.String(), p) {
			t.Errorf("%q does not say %q", v.String(), p)
		}
	}
}

// twoRooms has a run, a run broken on one side, page 0, the last page and
// a run across the index-K page table's wrap (pages 29, 30 → 39, 0).
func twoRooms() []Room {
	return []Room{
		room(7, []int64{3, 4, 5, 9, 29, 30}, []int64{10, 11, 20, 21, 0, 39}),
		room(8, []int64{0, 39}, []int64{5, 6}),
	}
}

func TestCorrectTransferHasNoViolations(t *testing.T) {
	f := newTFix(t, 2, 40, twoRooms()...)
	o := f.check(f.runs())
	if len(o.Violations) != 0 {
		t.Fatalf("violations:\n%s", dump(o.Violations))
	}
	if len(o.Digests) != 2*len(f.bufs) || !pd.DigestsMatch(o.Digests) {
		t.Errorf("digests %+v", o.Digests)
	}
	// The same transfer one descriptor per page is just as correct.
	g := newTFix(t, 2, 40, twoRooms()...)
	var single []pd.Descriptor
	for _, d := range g.runs() {
		for n := range d.Run {
			p := pd.Descriptor{Room: d.Room, Buffer: d.Buffer, Src: d.Src + n*d.ItemLen, Dst: d.Dst + n*d.ItemLen, Length: d.ItemLen, ItemLen: d.ItemLen, Run: 1}
			single = append(single, p)
		}
	}
	if o := g.check(single); len(o.Violations) != 0 {
		t.Fatalf("page by page:\n%s", dump(o.Violations))
	}
}

// TestDigestIsRelocationInvariant: the room's digest of a buffer depends
// on the source pages' bytes, not on where decode puts them.
func TestDigestIsRelocationInvariant(t *testing.T) {
	a := newTFix(t, 1, 40, room(1, []int64{3, 4}, []int64{10, 11}))
	b := newTFix(t, 1, 40, room(1, []int64{3, 4}, []int64{30, 2}))
	da, db := a.check(a.runs()).Digests, b.check(b.runs()).Digests
	for i := range da {
		if !da[i].Match() || da[i].Src != db[i].Src || da[i].Dst != db[i].Dst {
			t.Errorf("buffer %s: digests %+v and %+v", da[i].Buffer, da[i], db[i])
		}
	}
	if da[0].Src == da[1].Src {
		t.Error("two buffers have the same digest: the sides' backgrounds are not distinct")
	}
}

// fp8 item_len on the bf16 buffer: 132·P instead of 256·P, length agreeing
// with it. Every page is copied short and the next lands misaligned.
func TestFP8ItemLenOnBF16(t *testing.T) {
	f := newTFix(t, 1, 40, room(7, []int64{3, 4}, []int64{10, 11}))
	ds := f.runs()
	kv := &ds[0]
	fp8 := 132 * 64
	kv.Src, kv.Dst = f.bufs[0].Src.Pool.Off+3*fp8, f.bufs[0].Dst.Pool.Off+10*fp8
	kv.ItemLen, kv.Length = fp8, 2*fp8
	o := f.check(ds)
	v := first(t, o.Violations, BadDescriptor)
	if v.Buffer != "L0.kv" || v.Descriptor != 0 || v.Room != 0 || v.RoomID != 7 {
		t.Errorf("violation %v: want room 0 buffer L0.kv descriptor #0", v)
	}
	says(t, v, "item_len 8448, but L0.kv's pages are 16384 bytes (bf16)", "not on a page boundary")
	p := first(t, o.Violations, PageMismatch)
	if p.Buffer != "L0.kv" || p.Page != 0 || p.SrcPage != 3 || p.DstPage != 10 {
		t.Errorf("page violation %v: want page 0, src 3 → dst 10", p)
	}
	first(t, o.Violations, Coverage)
	first(t, o.Violations, Checksum)
}

func TestMalformedDescriptors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(f *tfix, d *pd.Descriptor)
		says  string
		dstIn bool // the destination still names the buffer's pool
	}{
		{"length", func(_ *tfix, d *pd.Descriptor) { d.Length -= 64 }, "length 16320 ≠ item_len 16384 × run 1", true},
		{"src in another pool", func(f *tfix, d *pd.Descriptor) { d.Src = f.bufs[1].Src.Pool.Off }, "is not inside L0.kv's src pages (it starts in L0.state's src page 0 (+0))", true},
		{"dst in a guard", func(f *tfix, d *pd.Descriptor) { d.Dst = f.bufs[0].Dst.GuardBefore.Off }, "L0.kv's dst guard before the pool", true},
		{"misaligned", func(_ *tfix, d *pd.Descriptor) { d.Dst += 256 }, "dst starts 256 bytes into page 10 of L0.kv", true},
		{"past the last page", func(f *tfix, d *pd.Descriptor) {
			d.Dst = f.bufs[0].Dst.Pool.Off + 39*16384
			d.Run, d.Length = 2, 2*16384
		}, "is not inside L0.kv's dst pages", true},
		{"no run", func(_ *tfix, d *pd.Descriptor) { d.Run, d.Length = 0, 0 }, "run 0: want at least one page", true},
		{"unknown room", func(_ *tfix, d *pd.Descriptor) { d.Room = 99 }, "names room id 99", true},
		{"unknown buffer", func(_ *tfix, d *pd.Descriptor) { d.Buffer = 3 }, "names buffer 3; the request sent 3 buffers", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := oneRoomFix(t)
			ds := f.runs()
			tc.edit(f, &ds[0])
			o := f.judge(ds) // judge only: some of these would copy out of bounds
			v := first(t, o.Violations, BadDescriptor)
			says(t, v, tc.says, "descriptor #0")
			if v.Kind != o.Violations[0].Kind || (tc.dstIn && v.Buffer != "L0.kv") {
				t.Errorf("violation %v; want it first and naming L0.kv", v)
			}
			// A malformed descriptor covers nothing.
			if c := first(t, o.Violations, Coverage); c.Buffer != "L0.kv" || c.Page != 0 {
				t.Errorf("coverage %v", c)
			}
		})
	}
}

func TestSkippedBuffer(t *testing.T) {
	f := newTFix(t, 1, 40, room(7, []int64{3, 4, 5}, []int64{10, 11, 12}))
	ds := slices.DeleteFunc(f.runs(), func(d pd.Descriptor) bool { return d.Buffer == 2 })
	o := f.check(ds)
	wantKinds(t, o, Coverage, PageMismatch, Checksum)
	c := first(t, o.Violations, Coverage)
	if c.Buffer != "L0.indexk" || c.Room != 0 || c.Page != 0 {
		t.Errorf("coverage %v", c)
	}
	says(t, c, "3 pages from here never sent: no descriptor names buffer L0.indexk")
	says(t, first(t, o.Violations, PageMismatch), "never written (it still holds the decode pool's background)")
	if n := len(o.Violations); n != 1+3+1 {
		t.Errorf("%d violations, want one coverage, 3 pages, one checksum:\n%s", n, dump(o.Violations))
	}
	d := o.Digests[2]
	if d.Buffer != "L0.indexk" || d.Match() || !o.Digests[0].Match() {
		t.Errorf("digests %+v", o.Digests)
	}
}

func TestSharedAllocationHint(t *testing.T) {
	f := oneRoomFix(t)
	ds := slices.DeleteFunc(f.runs(), func(d pd.Descriptor) bool { return d.Buffer == 1 })
	c := first(t, f.check(ds).Violations, Coverage)
	says(t, c, "buffer L0.state", "carved from allocation L0.kv together with L0.kv", "descriptor #0 sends L0.kv's copy of this page")
	if c.Descriptor != 0 {
		t.Errorf("coverage %v: want the descriptor L0.state was merged into, #0", c)
	}
}

func TestSentTwiceOverlaps(t *testing.T) {
	f := newTFix(t, 1, 40, room(7, []int64{3, 4}, []int64{10, 11}))
	ds := f.runs()
	ds = append(ds, f.desc(7, 0, 4, 11, 1))
	o := f.check(ds)
	wantKinds(t, o, Overlap, Coverage)
	ov := first(t, o.Violations, Overlap)
	if ov.Descriptor != 3 || ov.Buffer != "L0.kv" {
		t.Errorf("overlap %v: want descriptor #3 on L0.kv", ov)
	}
	says(t, ov, "descriptor #0 also writes")
	says(t, first(t, o.Violations, Coverage), "page 1 (src page 4 → dst page 11)", "sent 2 times, by descriptors #0, #3")
}

// The legacy page map: the first buffer's (identity) pages used for the
// index-K buffer, whose page table shifts them by 11.
func TestLegacyPageMap(t *testing.T) {
	f := newTFix(t, 1, 40, room(7, []int64{3, 4}, []int64{10, 30}))
	var ds []pd.Descriptor
	for _, d := range f.runs() {
		if d.Buffer == 2 {
			continue
		}
		ds = append(ds, d)
		if d.Buffer == 0 {
			ds = append(ds, pd.Descriptor{Room: 7, Buffer: 2, Src: f.bufs[2].Src.Pool.Off + (d.Src-f.bufs[0].Src.Pool.Off)/16384*8448,
				Dst: f.bufs[2].Dst.Pool.Off + (d.Dst-f.bufs[0].Dst.Pool.Off)/16384*8448, Length: 8448, ItemLen: 8448, Run: 1})
		}
	}
	o := f.check(ds)
	wantKinds(t, o, Coverage, PageMismatch, Outside, Checksum)
	c := first(t, o.Violations, Coverage)
	says(t, c, "room 0 (id 7) buffer L0.indexk page 0 (src page 14 → dst page 21)",
		"sends src page 3 → dst page 10 instead: L0.kv's page table (shift 0), not L0.indexk's (shift 11)")
	out := first(t, o.Violations, Outside)
	if out.Buffer != "L0.indexk" || out.DstPage != 10 || out.Descriptor < 0 {
		t.Errorf("outside %v: want dst page 10 of L0.indexk with its descriptor", out)
	}
	says(t, out, "room 0's page 0 untranslated: L0.indexk's page table puts that page at 21")
}

func TestRunCutShort(t *testing.T) {
	f := newTFix(t, 1, 40, room(7, []int64{3, 4, 5}, []int64{10, 11, 12}))
	ds := f.runs()
	ds[0].Run, ds[0].Length = 2, 2*16384
	o := f.check(ds)
	wantKinds(t, o, Coverage, PageMismatch, Checksum)
	c := first(t, o.Violations, Coverage)
	if c.Page != 2 || c.Descriptor != 0 {
		t.Errorf("coverage %v: want page 2 blamed on descriptor #0", c)
	}
	says(t, c, "a run cut short")
}

func TestStrayPageAndOutside(t *testing.T) {
	f := oneRoomFix(t)
	ds := append(f.runs(), f.desc(7, 1, 3, 25, 1))
	o := f.check(ds)
	wantKinds(t, o, Coverage, Outside)
	says(t, first(t, o.Violations, Coverage), "descriptor #3", "sends 1 page pairs the room does not have, the first src page 3 → dst page 25",
		"the room's page 0 goes from src page 3 to dst page 10 in L0.state")
	out := first(t, o.Violations, Outside)
	if out.DstPage != 25 || out.Descriptor != 3 || out.Off != 25*8448 || out.Len != 8448 {
		t.Errorf("outside %v", out)
	}
}

func TestGuardAndSourceWrites(t *testing.T) {
	f, ds := copiedFix(t)
	kv := f.bufs[0]
	f.mem[kv.Dst.Pool.Off-1] ^= 0xff    // the byte before the decode pool
	f.mem[kv.Src.Pool.Off+5*16384] ^= 1 // a prefill page
	o := f.judge(ds)
	wantKinds(t, o, Outside, SourceWrite)
	g := first(t, o.Violations, Outside)
	if g.Off != -1 || g.DstPage != -1 || g.Len != 1 || g.Got[0] != ^g.Want[0] {
		t.Errorf("guard write %v", g)
	}
	says(t, g, "L0.kv's dst guard before the pool")
	s := first(t, o.Violations, SourceWrite)
	if s.SrcPage != 5 || s.Off != 5*16384 {
		t.Errorf("source write %v", s)
	}
}

// A well-formed descriptor whose copy went wrong (here: from the wrong
// source page) is a page violation naming the descriptor and the page the
// bytes came from.
func TestWrongBytesUnderGoodDescriptor(t *testing.T) {
	f, ds := copiedFix(t)
	kv := f.bufs[0]
	copy(f.mem[kv.Dst.Pool.Off+10*16384:], f.mem[kv.Src.Pool.Off+17*16384:kv.Src.Pool.Off+18*16384])
	o := f.judge(ds)
	wantKinds(t, o, PageMismatch, Checksum)
	v := first(t, o.Violations, PageMismatch)
	if v.Descriptor != 0 || v.Off != 10*16384 || len(v.Want) != oracle.MaxShown {
		t.Errorf("page violation %v", v)
	}
	says(t, v, "it holds source page 17, not 3")
	cs := first(t, o.Violations, Checksum)
	if cs.Room != 0 || cs.Buffer != "L0.kv" || len(cs.Want) != pd.DigestSize {
		t.Errorf("checksum %v", cs)
	}
}

func TestGenericViolationNamesRoomBufferDescriptor(t *testing.T) {
	f := oneRoomFix(t)
	ds := f.runs()
	ds[1].ItemLen = 1
	g := first(t, f.judge(ds).Violations, BadDescriptor).Generic()
	if g.Kind != BadDescriptor || g.Field != "L0.state" || g.Row != oracle.NoRow || !strings.Contains(g.Detail, "room 0 (id 7) buffer L0.state descriptor #1") {
		t.Errorf("generic violation %+v", g)
	}
	if !slices.Contains(Kinds, Checksum) || slices.Index(Kinds, BadDescriptor) < slices.Index(Kinds, oracle.Geometry) {
		t.Errorf("Kinds %v: transfer kinds must follow the store kinds", Kinds)
	}
}

func TestViolationsOfAKindAreBounded(t *testing.T) {
	pages := make([]int64, 100)
	for i := range pages {
		pages[i] = int64(2 * i)
	}
	f := newTFix(t, 1, 200, room(1, pages, pages))
	o := f.check(nil)
	n := 0
	for _, v := range o.Violations {
		if v.Kind == PageMismatch {
			n++
			if n == maxPerKind && !strings.Contains(v.Detail, "and 236 more page violations") {
				t.Errorf("the last kept page violation does not count the rest: %s", v.Detail)
			}
		}
	}
	if n != maxPerKind {
		t.Errorf("%d page violations kept, want %d", n, maxPerKind)
	}
}

package transfer

import (
	"bytes"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/workload"
)

func TestTransferGeneratedCasesAreValid(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, pages := range []int{2, 3, 40} {
		g := pd.DefaultGeometry(2, pages)
		for _, p := range Profiles {
			gen := &Gen{Geometry: g, Profile: p, MaxRooms: 5}
			for range 300 {
				c := gen.Draw(rng)
				if err := c.Validate(pages * g.PageSize); err != nil {
					t.Fatalf("%s pages=%d: %v: %v", p, pages, c, err)
				}
			}
		}
	}
}

// TestTransferGeneratorIsAdversarial checks that the shapes transfer bugs
// need are drawn, not merely possible.
func TestTransferGeneratorIsAdversarial(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	g := pd.DefaultGeometry(1, 40)
	wrap := (&Gen{Geometry: g}).wrapEdge()
	seen := map[string]bool{}
	for _, p := range Profiles {
		gen := &Gen{Geometry: g, Profile: p}
		for range 200 {
			c := gen.Draw(rng)
			seen["rooms>1"] = seen["rooms>1"] || len(c.Rooms) > 1
			for _, r := range c.Rooms {
				noteRoom(seen, r, int64(g.Pages), wrap)
			}
		}
	}
	for _, k := range []string{"rooms>1", "page0", "last", "single", "run>=8", "wrap-run", "src-run-dst-broken", "gap-of-one"} {
		if !seen[k] {
			t.Errorf("never drew %s", k)
		}
	}
}

func noteRoom(seen map[string]bool, r Room, pages, wrap int64) {
	seen["single"] = seen["single"] || len(r.Src) == 1
	for j := range r.Src {
		seen["page0"] = seen["page0"] || r.Src[j] == 0 || r.Dst[j] == 0
		seen["last"] = seen["last"] || r.Src[j] == pages-1 || r.Dst[j] == pages-1
		if j == 0 {
			continue
		}
		srcRun, dstRun := r.Src[j] == r.Src[j-1]+1, r.Dst[j] == r.Dst[j-1]+1
		seen["wrap-run"] = seen["wrap-run"] || (srcRun && r.Src[j] == wrap)
		seen["src-run-dst-broken"] = seen["src-run-dst-broken"] || (srcRun && !dstRun)
		seen["gap-of-one"] = seen["gap-of-one"] || r.Src[j] == r.Src[j-1]+2
		if j >= 7 && r.Src[j] == r.Src[j-7]+7 {
			seen["run>=8"] = true
		}
	}
}

func TestShrinkTransferKeepsValidityAndShrinks(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	g := pd.DefaultGeometry(2, 30)
	for _, p := range Profiles {
		gen := &Gen{Geometry: g, Profile: p}
		for range 40 {
			c := gen.Draw(rng)
			kindtest.Shrinks(t, c, 0, Shrink, smaller)
		}
	}
}

// smaller is the order Shrink descends: rooms, buffers, pairs, the
// sum of page numbers, pool pages, then room ids in order.
func smaller(a, b *Case) bool {
	ka, kb := shrinkKey(a), shrinkKey(b)
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] < kb[i]
		}
	}
	return false
}

func shrinkKey(c *Case) []int64 {
	var sum, disorder int64
	for i, r := range c.Rooms {
		for j := range r.Src {
			sum += r.Src[j] + r.Dst[j]
		}
		if r.ID != uint64(i) {
			disorder = 1
		}
	}
	return []int64{int64(len(c.Rooms)), int64(len(c.Geometry.Buffers)), int64(c.PageCount()), sum, int64(c.Geometry.Pages), disorder}
}

// TestShrinkTransferReachesOnePage: repeatedly taking the first candidate
// that keeps a buffer named L0.indexk with a shifted page table ends at one
// room of one page over the smallest pool.
func TestShrinkTransferReachesOnePage(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	c := (&Gen{Geometry: pd.DefaultGeometry(2, 40), Profile: ProfileRuns}).Draw(rng)
	keeps := func(x *Case) bool {
		for _, b := range x.Geometry.Buffers {
			if b.Name == "L0.indexk" && b.Shift != 0 {
				return true
			}
		}
		return false
	}
	for steps := 0; ; steps++ {
		next := firstWhere(Shrink(c), keeps)
		if next == nil {
			break
		}
		c = next
		if steps > 10000 {
			t.Fatal("shrinking does not end")
		}
	}
	if len(c.Rooms) != 1 || c.PageCount() != 1 || len(c.Geometry.Buffers) != 1 || c.Geometry.Pages != 2 || c.Rooms[0].Src[0] != 0 {
		t.Errorf("shrunk to %v over %v", c, c.Geometry)
	}
}

func firstWhere(cs []*Case, ok func(*Case) bool) *Case {
	for _, c := range cs {
		if ok(c) {
			return c
		}
	}
	return nil
}

func TestDecodeTransferAlwaysValid(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	base := pd.DefaultGeometry(2, 12)
	for i := range 3000 {
		data := make([]byte, rng.Intn(120))
		rng.Read(data)
		c := Decode(data, base, 4, 8)
		if err := c.Validate(0); err != nil {
			t.Fatalf("input %d (%x): %v: %v", i, data, c, err)
		}
	}
	if err := Decode(nil, base, 4, 8).Validate(0); err != nil {
		t.Fatalf("empty input: %v", err)
	}
}

func TestEncodeTransferInvertsDecode(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	base := pd.DefaultGeometry(2, 40)
	for _, p := range Profiles {
		gen := &Gen{Geometry: base, Profile: p, MaxRooms: 4}
		for range 200 {
			c := gen.Draw(rng)
			for i := range c.Rooms {
				c.Rooms[i].ID = uint64(i)
				c.Rooms[i].Src, c.Rooms[i].Dst = c.Rooms[i].Src[:min(len(c.Rooms[i].Src), 16)], c.Rooms[i].Dst[:min(len(c.Rooms[i].Dst), 16)]
			}
			if rng.Intn(2) == 0 {
				c.Geometry = withBuffers(c, func(b pd.Buffer) bool { return b.Layer == 1 || b.Layout == "bf16" }).Geometry
			}
			data, err := Encode(c, base, 4, 16)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c, Decode(data, base, 4, 16)); diff != "" {
				t.Fatalf("Decode(Encode(%v)) differs (-want +got):\n%s", c, diff)
			}
		}
	}
}

func TestTransferJSONRoundTrip(t *testing.T) {
	c := (&Gen{Geometry: pd.DefaultGeometry(2, 16)}).Draw(rand.New(rand.NewSource(7)))
	if diff := cmp.Diff(workload.Case(c), kindtest.JSONRoundTrip(t, &Kind, c, 1<<30)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := Kind.Decode([]byte(`{"geometry": {}, "rooms": [], "extra": 1}`), 1<<30); err == nil {
		t.Error("an unknown field was accepted")
	}
}

func TestTransferValidateRejects(t *testing.T) {
	g := pd.DefaultGeometry(1, 8)
	room := func(src, dst []int64) Room { return Room{Src: src, Dst: dst} }
	bad := func(f func(*Case)) *Case {
		c := &Case{Geometry: g.Clone(), Rooms: []Room{room([]int64{1, 2}, []int64{3, 4})}}
		f(c)
		return c
	}
	for name, c := range map[string]*Case{
		"no rooms":         bad(func(c *Case) { c.Rooms = nil }),
		"length mismatch":  bad(func(c *Case) { c.Rooms[0].Dst = []int64{3} }),
		"page past end":    bad(func(c *Case) { c.Rooms[0].Src[1] = 8 }),
		"negative page":    bad(func(c *Case) { c.Rooms[0].Dst[0] = -1 }),
		"shared src page":  bad(func(c *Case) { c.Rooms = append(c.Rooms, Room{ID: 1, Src: []int64{2}, Dst: []int64{5}}) }),
		"shared dst page":  bad(func(c *Case) { c.Rooms = append(c.Rooms, Room{ID: 1, Src: []int64{5}, Dst: []int64{4}}) }),
		"page twice":       bad(func(c *Case) { c.Rooms[0].Src[1] = 1 }),
		"duplicate id":     bad(func(c *Case) { c.Rooms = append(c.Rooms, room([]int64{5}, []int64{5})) }),
		"shift past pages": bad(func(c *Case) { c.Geometry.Buffers[2].Shift = 8 }),
		"bad name":         bad(func(c *Case) { c.Geometry.Buffers[0].Name = "a;b" }),
		"same name":        bad(func(c *Case) { c.Geometry.Buffers[1].Name = c.Geometry.Buffers[0].Name }),
		"unknown layout":   bad(func(c *Case) { c.Geometry.Buffers[0].Layout = "fp4" }),
		"no buffers":       bad(func(c *Case) { c.Geometry.Buffers = nil }),
		"pool too big":     bad(func(c *Case) { c.Geometry.Pages = pd.MaxTransferPages + 1 }),
	} {
		if err := c.Validate(0); err == nil {
			t.Errorf("%s: accepted %v", name, c)
		}
	}
	if err := bad(func(*Case) {}).Validate(8 * 64); err != nil {
		t.Errorf("a good case was refused: %v", err)
	}
	if err := bad(func(*Case) {}).Validate(7 * 64); err == nil {
		t.Error("a case over more slots than the pool has was accepted")
	}
}

func TestPoolNamesAndDescribe(t *testing.T) {
	g := pd.DefaultGeometry(1, 40)
	l, err := g.Layout(0)
	if err != nil {
		t.Fatal(err)
	}
	var got []pool.Buffer
	for _, b := range g.Buffers {
		spec := b.Pool(pd.SideDst, l, 64)
		if spec.Name != "dst/"+b.Name {
			t.Errorf("pool %q, want dst/%s", spec.Name, b.Name)
		}
		got = append(got, *spec.Buffer)
	}
	want := []pool.Buffer{{Side: "dst", Name: "L0.kv"}, {Side: "dst", Name: "L0.state", Alloc: "L0.kv"}, {Side: "dst", Name: "L0.indexk", Shift: 11}}
	if !slices.Equal(got, want) {
		t.Errorf("pool buffers %+v, want %+v", got, want)
	}
	c := &Case{Geometry: g, Rooms: []Room{{ID: 9, Src: []int64{3, 4, 5, 9}, Dst: []int64{0, 1, 7, 8}}}}
	var b bytes.Buffer
	c.Describe(&b, "")
	for _, want := range []string{"src [3..5 9] → dst [0..1 7..8]", "carved from allocation L0.kv", "page table: +11", "room 0 (id 9)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Describe does not say %q:\n%s", want, b.String())
		}
	}
	if got := c.String(); got != "1 rooms, 4 pages, 3 buffers: [3..5 9]→[0..1 7..8]" {
		t.Errorf("String = %q", got)
	}
}

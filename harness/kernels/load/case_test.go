package load

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
)

func testGeometry() Geometry { return DefaultGeometry(DefaultLayers, DefaultPages, testPageSize) }

func validCase() *Case {
	return &Case{Geometry: testGeometry(), Op: OpLoad, Layers: 2, Buffers: []string{"kv", "indexk"}, Order: []string{"indexk", "kv"},
		Pages: []Page{{0, 3}, {1, 5}}, Late: []Item{{1, "kv", 0}}}
}

// TestCaseValidate: a hand-edited case fails with a reason naming what is
// wrong; a valid one passes.
func TestCaseValidate(t *testing.T) {
	if err := validCase().Validate(0); err != nil {
		t.Fatal(err)
	}
	for want, edit := range map[string]func(*Case){
		"op":                  func(c *Case) { c.Op = "fetch" },
		"3 layers":            func(c *Case) { c.Layers = 3; c.Geometry.Layers = 2 },
		"first layer":         func(c *Case) { c.FirstLayer = -1 },
		"want distinct names": func(c *Case) { c.Buffers = []string{"indexk", "kv"} },
		"order":               func(c *Case) { c.Order = []string{"kv"} },
		"outside the 8 pages": func(c *Case) { c.Pages[1].Dst = 8 },
		"repeats":             func(c *Case) { c.Pages[1].Dst = 3 },
		"late L2/kv page 0":   func(c *Case) { c.Late = []Item{{2, "kv", 0}} },
		"listed twice":        func(c *Case) { c.Late = append(c.Late, c.Late[0]) },
		"only a load's":       func(c *Case) { c.Op, c.Fail = OpStore, []Item{{0, "kv", 0}} },
		"late_inputs":         func(c *Case) { c.LateInputs = []Item{{0, "kv", 0}} },
		"readers":             func(c *Case) { c.Readers = []int{2} },
		"geometry":            func(c *Case) { c.Geometry.Buffers[0].Layout = "bf17" },
	} {
		c := validCase()
		edit(c)
		if err := c.Validate(0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// TestCaseJSONRoundTrips: a case reads back as itself through the
// registry's strict decoder.
func TestCaseJSONRoundTrips(t *testing.T) {
	c := validCase()
	c.FirstLayer, c.Readers = 7, []int{1}
	if back := kindtest.JSONRoundTrip(t, &Kind, c, 0); back.String() != c.String() {
		t.Errorf("read back %v, want %v", back, c)
	}
	if _, err := Kind.Decode([]byte(`{"op": "load", "layers": 1, "surprise": 1}`), 0); err == nil || !strings.Contains(err.Error(), string(Name)) {
		t.Errorf("an unknown field: %v", err)
	}
}

// TestGeneratedCasesAreValid: every profile draws valid cases, and the
// schedule they draw is the one the doc promises (a first late layer after
// the first, most of the time).
func TestGeneratedCasesAreValid(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, p := range Profiles {
		g := &Gen{Geometry: testGeometry(), Profile: p}
		lateAfterFirst := 0
		for range 2000 {
			c := g.Draw(rng)
			if err := c.Validate(0); err != nil {
				t.Fatalf("%s drew %v: %v", p, c, err)
			}
			if len(c.Late) > 0 && c.Late[0].Layer > 0 {
				lateAfterFirst++
			}
			switch {
			case p == ProfileReuse && len(c.Readers) == 0, p == ProfileFail && len(c.Fail) == 0, p == ProfileStore && c.Op != OpStore:
				t.Fatalf("%s drew %v", p, c)
			}
		}
		if p == ProfileLoad && lateAfterFirst < 1000 {
			t.Errorf("load drew a first late layer after layer 0 in %d of 2000 cases", lateAfterFirst)
		}
	}
}

// TestShrinkStaysValidAndSmaller: every shrink of a drawn case is valid
// and smaller by the shrinker's measure, so shrinking ends.
func TestShrinkStaysValidAndSmaller(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, p := range Profiles {
		g := &Gen{Geometry: testGeometry(), Profile: p}
		for range 300 {
			c := g.Draw(rng)
			kindtest.Shrinks(t, c, 0, Shrink, smaller)
		}
	}
	far := &Gen{Geometry: testGeometry().Far(), Profile: ProfileEdges} // shrinks keep to the live pages
	for range 300 {
		kindtest.Shrinks(t, far.Draw(rng), 0, Shrink, smaller)
	}
}

// smaller compares by the shrinker's measures, in its order.
func smaller(x, c *Case) bool {
	size := func(c *Case) []int {
		n := 0
		for _, p := range c.Pages {
			n += p.Src + p.Dst
		}
		canon := 0
		if strings.Join(c.Order, ",") != strings.Join(canonicalOrder(c.Buffers), ",") {
			canon = 1
		}
		return []int{c.Layers + len(c.Buffers) + len(c.Pages) + len(c.Late) + len(c.LateInputs) + len(c.Fail) + len(c.Readers),
			c.FirstLayer + canon + n}
	}
	a, b := size(x), size(c)
	return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1])
}

func randFor(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

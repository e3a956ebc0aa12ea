package read

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/oracle/oracletest"
	"github.com/kvharness/kvharness/harness/pool"
)

// seed is the background of the oracle tests' pools.
const seed = 42

func normal(seed uint64) Vec { return Vec{Kind: VecNormal, Seed: seed} }

// readCase builds a case from lists; every slot gets a normal key seeded
// by its slot unless keys overrides it.
func readCase(k int, keys map[int64]Vec, lists ...[]int64) *Case {
	c := &Case{K: k}
	seen := map[int64]bool{}
	for i, l := range lists {
		c.Requests = append(c.Requests, Request{Query: normal(uint64(1000 + i)), Tokens: l})
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				v, ok := keys[s]
				if !ok {
					v = normal(uint64(s))
				}
				c.Keys = append(c.Keys, Key{Slot: s, Vec: v})
			}
		}
	}
	return c
}

func newReadCheck(t *testing.T, name string, c *Case) *Oracle {
	t.Helper()
	l := kindtest.Layout(t, name, 128, 64)
	if err := c.Validate(256); err != nil {
		t.Fatal(err)
	}
	g, err := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 256}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return NewOracle(l, g.Regions[0], seed, c, Options{})
}

// reference is the answer a perfect kernel gives: the reference order,
// scores rounded to float32, padding after.
func reference(rc *Oracle) Output {
	k := rc.Case.K
	out := Output{Slots: make([]int64, k*len(rc.Case.Requests)), Scores: make([]float32, k*len(rc.Case.Requests))}
	for r := range rc.Case.Requests {
		for i := range k {
			out.Slots[r*k+i], out.Scores[r*k+i] = -1, float32(math.NaN())
			if ref := rc.Reference(r); i < len(ref) {
				out.Slots[r*k+i], out.Scores[r*k+i] = ref[i].Slot, float32(ref[i].Score)
			}
		}
	}
	return out
}

func onlyRead(t *testing.T, vs []oracle.Violation, kind oracle.Kind, says string) oracle.Violation {
	t.Helper()
	v := oracletest.Only(t, vs, kind)
	if !strings.Contains(v.Detail, says) {
		t.Errorf("violation %q does not say %q", v.Detail, says)
	}
	return v
}

func TestCorrectReadPasses(t *testing.T) {
	tie := map[int64]Vec{9: normal(5), 70: {Kind: VecZero}, 71: {Kind: VecZero}}
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		c := readCase(3, tie, []int64{0, 5, 9, 63, 64, 70, 71}, nil, []int64{255, 5}, []int64{70, 71, 1, 2})
		rc := newReadCheck(t, name, c)
		if vs := rc.CheckResult(reference(rc)); len(vs) != 0 {
			t.Errorf("%s: %v", name, vs)
		}
		if rc.Exact != (name == "bf16") {
			t.Errorf("%s: exact = %v", name, rc.Exact)
		}
	}
}

// mutate applies f to a perfect answer and checks the result.
func mutate(t *testing.T, name string, c *Case, f func(rc *Oracle, out Output)) []oracle.Violation {
	t.Helper()
	rc := newReadCheck(t, name, c)
	out := reference(rc)
	f(rc, out)
	return rc.CheckResult(out)
}

func TestForeignSlotNamesItsOwner(t *testing.T) {
	vs := mutate(t, "bf16", readCase(4, nil, []int64{1, 2, 3}, []int64{40, 41}), func(rc *Oracle, out Output) {
		out.Slots[2] = 41 // request 0, rank 2: an unmasked tail read request 1's token
	})
	v := onlyRead(t, vs, TopK, "slot 41 is not in the request's list (request 1's token)")
	if v.Row != 0 || v.Slot != 41 || !strings.Contains(v.Detail, "expected [") || !strings.Contains(v.Detail, "first difference at rank 2") {
		t.Errorf("violation %+v", v)
	}
}

func TestPaddingMustBeMinusOneAndNaN(t *testing.T) {
	c := readCase(4, nil, []int64{1, 2})
	onlyRead(t, mutate(t, "bf16", c, func(_ *Oracle, out Output) { out.Slots[3] = 0 }), TopK, "want padding")
	onlyRead(t, mutate(t, "bf16", c, func(_ *Oracle, out Output) { out.Scores[2] = 0 }), TopK, "want padding")
	onlyRead(t, mutate(t, "bf16", c, func(_ *Oracle, out Output) { out.Slots[1] = -1 }), TopK, "want 2 results")
}

func TestDuplicateSlot(t *testing.T) {
	vs := mutate(t, "fp8-rows", readCase(3, nil, []int64{1, 2, 3, 4}), func(_ *Oracle, out Output) {
		out.Slots[2], out.Scores[2] = out.Slots[0], out.Scores[0]
	})
	onlyRead(t, vs, TopK, "again (first at rank 0)")
}

func TestOrder(t *testing.T) {
	vs := mutate(t, "bf16", readCase(3, nil, []int64{1, 2, 3, 4, 5}), func(_ *Oracle, out Output) {
		out.Slots[0], out.Slots[1] = out.Slots[1], out.Slots[0]
		out.Scores[0], out.Scores[1] = out.Scores[1], out.Scores[0]
	})
	onlyRead(t, vs, TopK, "out of order")
}

// worstInstead returns the reference top k-1 and then the list's worst
// token: sorted, plausible scores, one better token left out.
func worstInstead(rc *Oracle, out Output) {
	ref, k := rc.Reference(0), rc.Case.K
	out.Slots[k-1], out.Scores[k-1] = ref[len(ref)-1].Slot, float32(ref[len(ref)-1].Score)
}

func TestBetterTokenLeftOut(t *testing.T) {
	onlyRead(t, mutate(t, "bf16", readCase(3, nil, []int64{1, 2, 3, 4, 5, 6}), worstInstead), TopK, "is left out, but slot")
}

// TestJaccardOnQuantizedLayouts: one token of a hundred swapped for a
// worse one passes at Jaccard 99/101 on fp8 but not on bf16 (exact), and
// one of four fails on fp8 too.
func TestJaccardOnQuantizedLayouts(t *testing.T) {
	long := make([]int64, 150)
	for i := range long {
		long[i] = int64(i)
	}
	if vs := mutate(t, "fp8-paged", readCase(100, nil, long), worstInstead); len(vs) != 0 {
		t.Errorf("fp8, 1 of 100 swapped: %v", vs)
	}
	onlyRead(t, mutate(t, "bf16", readCase(100, nil, long), worstInstead), TopK, "left out")
	onlyRead(t, mutate(t, "fp8-paged", readCase(4, nil, long), worstInstead), TopK, "Jaccard 0.600 < 0.980")
}

// TestTiesGoToTheLowerSlot: slots 7 and 3 hold the same key; with k 1
// and only those two, slot 3 must be the answer.
func TestTiesGoToTheLowerSlot(t *testing.T) {
	same := map[int64]Vec{7: normal(1), 3: normal(1)}
	c := readCase(1, same, []int64{7, 3})
	if vs := mutate(t, "fp8-rows", c, func(*Oracle, Output) {}); len(vs) != 0 {
		t.Fatalf("the lower slot first: %v", vs)
	}
	onlyRead(t, mutate(t, "fp8-rows", c, func(_ *Oracle, out Output) { out.Slots[0] = 7 }), TopK, "ties with it exactly")
	c.K = 2 // both returned: equal scores, so the lower slot comes first
	onlyRead(t, mutate(t, "bf16", c, func(_ *Oracle, out Output) { out.Slots[0], out.Slots[1] = 7, 3 }), TopK, "out of order")
}

// TestZeroQueryTiesEverything: a zero query scores every token exactly 0,
// so the k lowest slots are the answer, lowest first.
func TestZeroQueryTiesEverything(t *testing.T) {
	c := readCase(2, nil, []int64{30, 10, 20})
	c.Requests[0].Query = Vec{Kind: VecZero}
	rc := newReadCheck(t, "bf16", c)
	if ref := rc.Reference(0); ref[0].Slot != 10 || ref[1].Slot != 20 || !ref[0].Zero {
		t.Fatalf("reference %v", ref)
	}
	if vs := rc.CheckResult(reference(rc)); len(vs) != 0 {
		t.Fatal(vs)
	}
	out := reference(rc)
	out.Slots[1] = 30
	onlyRead(t, rc.CheckResult(out), TopK, "slot 20 ties with it exactly")
}

func TestScoreTolerance(t *testing.T) {
	c := readCase(2, nil, []int64{10, 11, 12})
	within := func(_ *Oracle, out Output) {
		out.Scores[0] = math.Nextafter32(out.Scores[0], float32(math.Inf(1)))
	}
	if vs := mutate(t, "bf16", c, within); len(vs) != 0 {
		t.Errorf("one ulp off: %v", vs)
	}
	vs := mutate(t, "fp8-paged", c, func(_ *Oracle, out Output) { out.Scores[1] *= 1.01 })
	if !oracle.HasKind(vs, Score) || !strings.Contains(vs[0].Detail, "rank 1 slot") {
		t.Errorf("1%% off: %v", vs)
	}
	vs = mutate(t, "bf16", c, func(_ *Oracle, out Output) { out.Scores[0] = float32(math.NaN()) })
	if !oracle.HasKind(vs, Score) {
		t.Errorf("NaN score: %v", vs)
	}
}

// TestToleranceCoversFloat32Kernels: scores summed in float32 in several
// orders, as CPU and GPU kernels do, all pass; they are not all equal.
func TestToleranceCoversFloat32Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"bf16", "fp8-paged"} {
		for range 50 {
			kinds := []VecKind{VecNormal, VecTiny, VecOutlier, VecHuge}
			keys := map[int64]Vec{}
			list := []int64{1, 2, 3, 4, 5, 6, 7, 8}
			for _, s := range list {
				keys[s] = Vec{Kind: kinds[rng.IntN(len(kinds))], Seed: rng.Uint64()}
			}
			rc := newReadCheck(t, name, readCase(3, keys, list))
			for _, order := range []string{"forward", "backward", "pairwise"} {
				out := float32Kernel(rc, order)
				if vs := rc.CheckResult(out); len(vs) != 0 {
					t.Fatalf("%s, %s sum: %v", name, order, vs)
				}
			}
		}
	}
}

// float32Kernel scores like a kernel: float32 products of the decoded
// key, summed in the given order, top k by the contract's order.
func float32Kernel(rc *Oracle, order string) Output {
	k := rc.Case.K
	out := Output{Slots: make([]int64, k), Scores: make([]float32, k)}
	q := rc.Queries()[0]
	type sc struct {
		slot  int64
		score float32
	}
	var all []sc
	for _, s := range rc.Case.Requests[0].Tokens {
		key := rc.keys[s].value
		p := make([]float32, len(q))
		for d := range q {
			p[d] = layout.BF16ToFloat32(q[d]) * float32(key[d])
		}
		all = append(all, sc{s, sum32(p, order)})
	}
	slices.SortFunc(all, func(a, b sc) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return int(a.slot - b.slot)
	})
	for i := range k {
		out.Slots[i], out.Scores[i] = all[i].slot, all[i].score
	}
	return out
}

func sum32(p []float32, order string) float32 {
	switch order {
	case "backward":
		var acc float32
		for i := len(p) - 1; i >= 0; i-- {
			acc += p[i]
		}
		return acc
	case "pairwise":
		for len(p) > 1 {
			next := make([]float32, 0, (len(p)+1)/2)
			for i := 0; i < len(p); i += 2 {
				if i+1 < len(p) {
					next = append(next, p[i]+p[i+1])
				} else {
					next = append(next, p[i])
				}
			}
			p = next
		}
		return p[0]
	}
	var acc float32
	for _, x := range p {
		acc += x
	}
	return acc
}

// poolAfter plays a read on the case's pool: the harness's key writes,
// then the kernel's stray bytes, and returns the run's delta.
func poolAfter(rc *Oracle, stray map[int][]byte) oracle.Delta {
	base := rc.Region.GuardBefore.Len
	bg := pool.Background(seed, 0, rc.Region.Span().Len)
	mem := slices.Clone(bg)
	for _, w := range rc.Writes() {
		for p, sp := range w.Spans {
			copy(mem[base+sp.Off:], w.Records[p])
		}
	}
	for off, b := range stray {
		copy(mem[base+off:], b)
	}
	return kindtest.Delta(mem, bg, pool.Window{Len: len(mem)}, base)
}

func TestReadOnlyPool(t *testing.T) {
	for _, name := range []string{"bf16", "fp8-paged"} {
		rc := newReadCheck(t, name, readCase(2, nil, []int64{0, 5, 200}))
		if vs := rc.CheckPool(poolAfter(rc, nil)); len(vs) != 0 {
			t.Fatalf("%s: the harness's own writes: %v", name, vs)
		}
		key := rc.Layout.Footprint(5)[0].Off
		v := onlyRead(t, rc.CheckPool(poolAfter(rc, map[int][]byte{key + 3: {0xaa, 0xbb}})), ReadOnly, "slot 5 changed")
		if v.Slot != 5 || v.Off != key+3 || v.Len > 2 {
			t.Errorf("%s: %+v", name, v)
		}
		free := rc.Layout.Footprint(9)[0].Off
		v = onlyRead(t, rc.CheckPool(poolAfter(rc, map[int][]byte{free: {1, 2, 3, 4}})), Scratch, "scratch")
		if v.Slot != 9 || !v.HasSlot {
			t.Errorf("%s: %+v", name, v)
		}
		v = onlyRead(t, rc.CheckPool(poolAfter(rc, map[int][]byte{-8: {7}})), Scratch, "guard before")
		if v.HasSlot || v.Off != -8 {
			t.Errorf("%s: %+v", name, v)
		}
	}
}

// TestKeyRestoredToBackground: a kernel that puts the background back over
// a key (it "restored" the wrong bytes) changed what it reads.
func TestKeyRestoredToBackground(t *testing.T) {
	rc := newReadCheck(t, "bf16", readCase(1, nil, []int64{3}))
	d := poolAfter(rc, nil)
	d.Windows, d.Bytes = d.Windows[:0], d.Bytes[:0]
	onlyRead(t, rc.CheckPool(d), ReadOnly, "slot 3 changed")
}

func TestDecodeKeyOfEveryLayout(t *testing.T) {
	for _, name := range layout.Names() {
		l, _ := layout.Builtin(name, 0, 16)
		row := Vec{Kind: VecNormal, Seed: 3}.Data(l.HeadDim)
		got := DecodeKey(l, l.Encode(row))
		amax := 0.0
		for _, e := range row {
			amax = max(amax, math.Abs(float64(layout.BF16ToFloat32(e))))
		}
		for d, e := range row {
			x := float64(layout.BF16ToFloat32(e))
			// e4m3 keeps 3 mantissa bits; a subnormal step is scale·2^-9,
			// and a power-of-two scale is up to twice amax/448.
			tol := math.Abs(x)/16 + 2*amax/448*math.Ldexp(1, -10)
			if !Quantized(l) {
				tol = 0
			}
			if math.Abs(got[d]-x) > tol {
				t.Fatalf("%s: element %d decodes to %v, input %v", name, d, got[d], x)
			}
		}
	}
}

func TestKindsOrder(t *testing.T) {
	at := slices.Index(Kinds, oracle.Determinism)
	for _, k := range Kinds {
		if i := slices.Index(Kinds, k); i < 0 || i > at {
			t.Errorf("kind %s at %d of Kinds, want before determinism (%d)", k, i, at)
		}
	}
}

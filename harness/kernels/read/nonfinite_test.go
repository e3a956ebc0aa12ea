package read

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
)

func nonFiniteGen(slots int) *Gen {
	g := readGen(slots)
	g.NonFinite = true
	return g
}

// TestNonFiniteDrawn: under a declared policy about one request in eight
// holds ±Inf or NaN, in its query or in a key no other request names;
// many cases hold both such a request and a fully judged one with tokens
// (where a leak between requests shows); every case is valid and only a
// declared policy admits it.
func TestNonFiniteDrawn(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	g := nonFiniteGen(4096)
	var requests, tainted, queries, keys, mixed int
	for range 400 {
		c := g.Draw(rng)
		if err := c.Validate(4096); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		names := map[int64]int{}
		for _, q := range c.Requests {
			for _, s := range q.Tokens {
				names[s]++
			}
		}
		vecs := c.KeyMap()
		var some, clean bool
		for _, q := range c.Requests {
			holds := q.Query.Kind == VecNonFinite || slices.ContainsFunc(q.Tokens, func(s int64) bool { return vecs[s].Kind == VecNonFinite })
			requests++
			if holds {
				tainted, some = tainted+1, true
			} else if len(q.Tokens) > 0 {
				clean = true
			}
			if q.Query.Kind == VecNonFinite {
				queries++
			}
		}
		for _, k := range c.Keys {
			if k.Kind == VecNonFinite {
				keys++
				if names[k.Slot] != 1 {
					t.Errorf("%v: non-finite key of slot %d is named by %d requests, want 1", c, k.Slot, names[k.Slot])
				}
			}
		}
		if some && clean {
			mixed++
		}
		if err := c.Admits(layout.Contained); err != nil {
			t.Errorf("contained refused %v: %v", c, err)
		}
		if err := c.Admits(layout.NonFiniteUndeclared); (err != nil) != some || err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: no policy: %v", c, err)
		}
	}
	t.Logf("%d of %d requests hold ±Inf or NaN, %d queries, %d keys; %d of 400 cases mixed", tainted, requests, queries, keys, mixed)
	if frac := float64(tainted) / float64(requests); frac < 0.05 || frac > 0.2 || queries == 0 || keys == 0 || mixed < 40 {
		t.Errorf("%d of %d requests hold ±Inf or NaN (%.3f), %d queries, %d keys, %d cases mixed; want about 1 in 8 of each kind, 40 mixed",
			tainted, requests, frac, queries, keys, mixed)
	}
}

// TestNonFiniteDrawsNothingElse: the same source draws the same lists,
// k and seeds with non-finite values on or off; without a policy no
// query or key is non-finite.
func TestNonFiniteDrawsNothingElse(t *testing.T) {
	for seed := range int64(100) {
		on, off := nonFiniteGen(512).Draw(rand.New(rand.NewSource(seed))), readGen(512).Draw(rand.New(rand.NewSource(seed)))
		if off.firstNonFinite() != "" {
			t.Fatalf("no policy, yet %s holds ±Inf or NaN", off.firstNonFinite())
		}
		same := on.K == off.K && len(on.Requests) == len(off.Requests) && len(on.Keys) == len(off.Keys)
		for i := 0; same && i < len(on.Requests); i++ {
			same = slices.Equal(on.Requests[i].Tokens, off.Requests[i].Tokens) && on.Requests[i].Query.Seed == off.Requests[i].Query.Seed
		}
		for i := 0; same && i < len(on.Keys); i++ {
			same = on.Keys[i].Slot == off.Keys[i].Slot && on.Keys[i].Seed == off.Keys[i].Seed
		}
		if !same {
			t.Fatalf("seed %d: %v with non-finite values, %v without", seed, on, off)
		}
	}
}

func TestShrinkKeepsNonFiniteCasesValid(t *testing.T) {
	rng := rand.New(rand.NewSource(22))
	g := nonFiniteGen(300)
	for range 100 {
		c := g.Draw(rng)
		kindtest.Shrinks(t, c, 300, Shrink, func(s, c *Case) bool {
			return len(s.Requests) <= len(c.Requests) && s.TotalTokens() <= c.TotalTokens() && s.K <= c.K
		})
	}
}

// TestDecodeNonFinite: the fuzz lanes decode into the same class (query
// kind byte 7, key kind byte 10), and a target whose plugin declares no
// policy judges such a case with normal vectors of the same seeds.
func TestDecodeNonFinite(t *testing.T) {
	// k 1, one request: query kind 7 seed 3, one token (raw slot 5); its key: kind 10, seed 4.
	c := Decode([]byte{0, 0, 7, 3, 1, 4, 5, 0, 0, 0, 10, 4}, decodeLimits)
	if c.Requests[0].Query != vec(VecNonFinite, 3) || len(c.Keys) != 1 || c.Keys[0].Vec != vec(VecNonFinite, 4) || c.Keys[0].Slot != 5 {
		t.Fatalf("decoded %+v", c)
	}
	fit := (&Target{}).Fit(c)
	if fit.Requests[0].Query != vec(VecNormal, 3) || fit.Keys[0].Vec != vec(VecNormal, 4) || fit.firstNonFinite() != "" {
		t.Errorf("fitted for no policy: %+v", fit)
	}
	if c.Requests[0].Query.Kind != VecNonFinite {
		t.Error("Fit changed its input")
	}
	if got := (&Target{NonFinite: layout.Contained}).Fit(c); got != c {
		t.Error("Fit changed a case a contained target judges as it is")
	}
}

func TestSpecialsNameTheValues(t *testing.T) {
	got := specials([]uint16{0x3f80, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0x7f7f})
	if want := "d1 +Inf, d2 -Inf, d3 NaN, d4 -NaN, d5 NaN(0x7f81)"; got != want {
		t.Errorf("specials = %q, want %q", got, want)
	}
}

// containedCase: request 0 is finite, request 1's key in slot 40 holds
// NaN (seed 1 draws one), request 2's query holds ±Inf or NaN.
func containedCase() *Case {
	c := readCase(3, map[int64]Vec{40: vec(VecNonFinite, 1)}, []int64{1, 2, 3, 4}, []int64{40, 41, 42}, []int64{50, 51})
	c.Requests[2].Query = vec(VecNonFinite, 2)
	return c
}

func containedOracle(t *testing.T, name string, c *Case, policy layout.NonFinite) *Oracle {
	t.Helper()
	l := kindtest.Layout(t, name, 128, 64)
	g, err := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 256}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return NewOracle(l, g.Regions[0], seed, c, Options{NonFinite: policy})
}

// TestContainedRequestsAreFree: under the contained policy a request
// whose key or query holds ±Inf or NaN may answer any ranking of its own
// list with any scores, slot -1 anywhere; without a policy the same
// answer is wrong.
func TestContainedRequestsAreFree(t *testing.T) {
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		c := containedCase()
		rc := containedOracle(t, name, c, layout.Contained)
		if rc.Contained(0) || !rc.Contained(1) || !rc.Contained(2) {
			t.Fatalf("%s: contained %v %v %v, want requests 1 and 2", name, rc.Contained(0), rc.Contained(1), rc.Contained(2))
		}
		out := reference(rc)
		nan := float32(math.NaN())
		copy(out.Slots[3:], []int64{42, -1, 40, 51, 50, -1})
		copy(out.Scores[3:], []float32{nan, 7, float32(math.Inf(-1)), 0, nan, 3})
		if vs := rc.CheckResult(out); len(vs) != 0 {
			t.Errorf("%s: a contained request's free answer flagged: %v", name, vs)
		}
		judged := containedOracle(t, name, c, layout.NonFiniteUndeclared)
		if vs := judged.CheckResult(out); !oracle.HasKind(vs, TopK) && !oracle.HasKind(vs, Score) {
			t.Errorf("%s: without a policy the same answer passed", name)
		}
	}
}

// TestContainedLeakIsCaught: what a NaN does to another request's answer
// is that request's violation, and a contained request still may not
// return a slot outside its list, or one twice.
func TestContainedLeakIsCaught(t *testing.T) {
	c := containedCase()
	rc := containedOracle(t, "bf16", c, layout.Contained)
	out := reference(rc)
	out.Scores[0] = float32(math.NaN()) // request 0's best token, scored NaN
	v := onlyRead(t, rc.CheckResult(out), Score, "score NaN")
	if v.Row != 0 {
		t.Errorf("violation of request %d, want 0", v.Row)
	}
	out = reference(rc)
	out.Slots[0], out.Slots[1] = out.Slots[1], out.Slots[0] // request 0 out of order
	out.Scores[0], out.Scores[1] = out.Scores[1], out.Scores[0]
	if v := onlyRead(t, rc.CheckResult(out), TopK, "out of order"); v.Row != 0 {
		t.Errorf("violation of request %d, want 0", v.Row)
	}
	out = reference(rc)
	out.Slots[4] = 2 // request 1 returns request 0's token
	v = onlyRead(t, rc.CheckResult(out), TopK, "slot 2 is not in the request's list (request 0's token)")
	if v.Row != 1 || !strings.Contains(v.Detail, "contained policy") {
		t.Errorf("violation %+v", v)
	}
	out = reference(rc)
	out.Slots[7] = out.Slots[6] // request 2 returns one slot twice
	onlyRead(t, rc.CheckResult(out), TopK, "again (first at rank 0)")
}

// TestTaintedByWhatTheKernelSees: a key is non-finite as the pool stores
// it, in float32: under power-of-two scales an infinite element becomes
// code 448 times 2^127, finite in float64 and infinite in a float32
// kernel; the request is contained all the same.
func TestTaintedByWhatTheKernelSees(t *testing.T) {
	l, err := kindtest.Layout(t, "fp8-paged", 128, 64).WithRecipe(&layout.Recipe{Scale: layout.ScaleUE8M0})
	if err != nil {
		t.Fatal(err)
	}
	var s uint64
	for ; ; s++ { // a key whose only specials are infinities
		d := vec(VecNonFinite, s).Data(128)
		if strings.Contains(specials(d), "Inf") && !strings.Contains(specials(d), "NaN") {
			break
		}
	}
	value := DecodeKey(l, l.Encode(vec(VecNonFinite, s).KeyData(l)))
	if slices.ContainsFunc(value, math.IsNaN) || !slices.ContainsFunc(value, nonFinite) {
		t.Fatalf("seed %d decodes without NaN to %v; want an element past float32", s, value)
	}
	g, _ := pool.Plan([]pool.Spec{{Name: "p", Layout: l, Slots: 256}}, 0)
	rc := NewOracle(l, g.Regions[0], seed, readCase(1, map[int64]Vec{7: vec(VecNonFinite, s)}, []int64{7, 8}), Options{NonFinite: layout.Contained})
	if !rc.Contained(0) {
		t.Error("a key infinite in float32 left its request judged")
	}
}

// TestDeterminismWhereJudged: two runs may differ in a contained
// request's answer, not in another's.
func TestDeterminismWhereJudged(t *testing.T) {
	rc := containedOracle(t, "bf16", containedCase(), layout.Contained)
	a, b := reference(rc), reference(rc)
	b.Slots[3], b.Slots[4] = b.Slots[4], b.Slots[3]
	b.Scores[6] = 1
	if v := rc.sameOutput(a, b); v != nil {
		t.Errorf("contained requests differing: %v", v)
	}
	b.Scores[1] = math.Nextafter32(b.Scores[1], 0)
	if v := rc.sameOutput(a, b); v == nil || v.Row != 0 {
		t.Errorf("request 0 differing: %v", v)
	}
}

func TestReadPolicy(t *testing.T) {
	for _, tc := range []struct {
		d    plugin.Description
		want layout.NonFinite
		err  string
	}{
		{plugin.Description{}, "", ""},
		{plugin.Description{ReadNonFinite: layout.Contained}, layout.Contained, ""},
		{plugin.Description{ReadNonFinite: layout.Propagate}, "", "declares read_non_finite propagate: a read kernel declares contained or nothing"},
		{plugin.Description{ReadNonFinite: layout.Saturate}, "", "saturate is a store's recipe policy"},
	} {
		got, err := Policy("p", &tc.d)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %q, %v; want %q, %q", tc.d.ReadNonFinite, got, err, tc.want, tc.err)
		}
	}
}

// TestValueLinesSayWhatWasExplored: a plugin that declares no policy is
// told ±Inf and NaN were not explored, and why.
func TestValueLinesSayWhatWasExplored(t *testing.T) {
	none := strings.Join(valueLines(""), "\n")
	if !strings.Contains(none, "not explored: ±Inf and NaN in keys and queries (the plugin declares no read non-finite policy") ||
		strings.Contains(none, "non-finite;") {
		t.Errorf("no policy:\n%s", none)
	}
	contained := strings.Join(valueLines(layout.Contained), "\n")
	if !strings.Contains(contained, "max-finite (under zero, tiny, subnormal and signed-zero queries only), non-finite;") ||
		!strings.Contains(contained, "±Inf and NaN contained") || strings.Contains(contained, "not explored") {
		t.Errorf("contained:\n%s", contained)
	}
}

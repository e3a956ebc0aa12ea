package read

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/workload"
)

func readGen(slots int) *Gen {
	return &Gen{Slots: slots, PageSize: 16, MaxRequests: 6, MaxTokens: 200, MaxK: 24}
}

func TestReadGeneratedCasesAreValid(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, slots := range []int{1, 3, 64, 4096} {
		g := readGen(slots)
		for range 400 {
			c := g.Draw(rng)
			if err := c.Validate(slots); err != nil {
				t.Fatalf("slots %d: %v: %v", slots, c, err)
			}
		}
	}
}

// TestReadGeneratorIsAdversarial: the shapes read kernels get wrong are
// drawn, not merely possible.
func TestReadGeneratorIsAdversarial(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	g := readGen(4096)
	seen := map[string]bool{}
	for range 300 {
		c := g.Draw(rng)
		vecs := map[Vec]int{}
		for _, k := range c.Keys {
			vecs[k.Vec]++
			seen["zero-key"] = seen["zero-key"] || k.Kind == VecZero
			seen["huge-key"] = seen["huge-key"] || k.Kind == VecHuge
			seen["max-finite-key"] = seen["max-finite-key"] || k.Kind == VecMaxFinite
			seen["tie"] = seen["tie"] || vecs[k.Vec] > 1
		}
		owner := map[int64]int{}
		for i, q := range c.Requests {
			seen["empty"] = seen["empty"] || len(q.Tokens) == 0
			seen["short"] = seen["short"] || len(q.Tokens) > 0 && len(q.Tokens) < c.K
			seen["zero-query"] = seen["zero-query"] || q.Query.Kind == VecZero
			for _, s := range q.Tokens {
				seen["slot0"] = seen["slot0"] || s == 0
				seen["last"] = seen["last"] || s == 4095
				seen["edge"] = seen["edge"] || s%16 == 15 && s != 4095
				if j, ok := owner[s]; ok && j != i {
					seen["shared"] = true
				}
				owner[s] = i
			}
		}
	}
	for _, k := range []string{"zero-key", "huge-key", "max-finite-key", "tie", "empty", "short", "zero-query", "slot0", "last", "edge", "shared"} {
		if !seen[k] {
			t.Errorf("300 cases never drew %s", k)
		}
	}
}

func TestShrinkReadKeepsValidityAndShrinks(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	g := readGen(300)
	for range 100 {
		c := g.Draw(rng)
		kindtest.Shrinks(t, c, 300, Shrink, func(s, c *Case) bool {
			return len(s.Requests) <= len(c.Requests) && s.TotalTokens() <= c.TotalTokens() && s.K <= c.K
		})
	}
}

// TestShrinkReadReachesTheCore: repeatedly taking the first candidate that
// still holds a property (here: request 1 names slot 9 after request 0's
// list) ends at two one-token requests, k 1, and the slots renamed to the
// smallest the property allows.
func TestShrinkReadReachesTheCore(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	var c *Case
	for c == nil || !holdsCore(c) {
		c = readGen(64).Draw(rng)
		if len(c.Requests) >= 2 {
			c.Requests[1].Tokens = append(c.Requests[1].Tokens, 9)
			c.Keys = readGenKeys(c)
		}
	}
	for steps := 0; steps < 1000; steps++ {
		next := firstHolding(Shrink(c))
		if next == nil {
			break
		}
		c = next
	}
	if len(c.Requests) != 2 || c.TotalTokens() != 1 || c.K != 1 {
		t.Errorf("shrunk to %v; want 2 requests, 1 token, k 1", c)
	}
}

func holdsCore(c *Case) bool {
	if len(c.Requests) < 2 || c.Validate(64) != nil {
		return false
	}
	for _, s := range c.Requests[1].Tokens {
		if s == 9 {
			return true
		}
	}
	return false
}

func firstHolding(cs []*Case) *Case {
	for _, c := range cs {
		if holdsCore(c) {
			return c
		}
	}
	return nil
}

// readGenKeys rebuilds keys for c's lists, with plain vectors.
func readGenKeys(c *Case) []Key {
	var keys []Key
	seen := map[int64]bool{}
	for _, q := range c.Requests {
		for _, s := range q.Tokens {
			if !seen[s] {
				seen[s] = true
				keys = append(keys, Key{Slot: s, Vec: Vec{Kind: VecNormal, Seed: uint64(s)}})
			}
		}
	}
	return keys
}

var decodeLimits = Limits{Slots: 100, PageSize: 8, MaxRequests: 4, MaxK: 16, MaxList: 32, MaxTokens: 64}

func TestDecodeReadAlwaysValid(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	for i := range 3000 {
		data := make([]byte, rng.Intn(300))
		rng.Read(data)
		c := Decode(data, decodeLimits)
		if err := c.Validate(decodeLimits.Slots); err != nil {
			t.Fatalf("input %d (%x): %v: %v", i, data, c, err)
		}
	}
	if err := Decode(nil, decodeLimits).Validate(decodeLimits.Slots); err != nil {
		t.Fatalf("empty input: %v", err)
	}
}

func TestEncodeReadInvertsDecode(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	g := &Gen{Slots: decodeLimits.Slots, PageSize: 8, MaxRequests: 4, MaxTokens: 64, MaxK: 16}
	for range 300 {
		c := g.Draw(rng)
		for i := range c.Requests {
			c.Requests[i].Query.Seed %= 256
			c.Requests[i].Tokens = c.Requests[i].Tokens[:min(len(c.Requests[i].Tokens), decodeLimits.MaxList)]
		}
		c.dropUnusedKeys()
		for i := range c.Keys {
			c.Keys[i].Seed %= 256
		}
		back := Decode(Encode(c, decodeLimits), decodeLimits)
		if diff := cmp.Diff(c, back); diff != "" {
			t.Fatalf("Decode(Encode(%v)) differs (-want +got):\n%s", c, diff)
		}
	}
}

func TestReadJSONRoundTrip(t *testing.T) {
	c := readGen(500).Draw(rand.New(rand.NewSource(17)))
	if diff := cmp.Diff(workload.Case(c), kindtest.JSONRoundTrip(t, &Kind, c, 1<<20)); diff != "" {
		t.Errorf("read case JSON round trip (-want +got):\n%s", diff)
	}
	if _, err := Kind.Decode([]byte(`{"k": 1, "keys": [], "requests": [], "extra": 1}`), 1<<20); err == nil {
		t.Error("unknown field accepted")
	}
}

func TestReadValidateRejects(t *testing.T) {
	key := func(s int64) Key { return Key{Slot: s, Vec: Vec{Kind: VecNormal}} }
	req := func(tokens ...int64) Request { return Request{Query: Vec{Kind: VecNormal}, Tokens: tokens} }
	for _, tc := range []struct {
		name string
		c    Case
	}{
		{"no requests", Case{K: 1}},
		{"k 0", Case{K: 0, Requests: []Request{req()}}},
		{"slot past end", Case{K: 1, Keys: []Key{key(100)}, Requests: []Request{req(100)}}},
		{"negative slot", Case{K: 1, Keys: []Key{key(-1)}, Requests: []Request{req(-1)}}},
		{"duplicate token", Case{K: 1, Keys: []Key{key(3)}, Requests: []Request{req(3, 3)}}},
		{"token without key", Case{K: 1, Requests: []Request{req(3)}}},
		{"two keys for a slot", Case{K: 1, Keys: []Key{key(3), key(3)}, Requests: []Request{req(3)}}},
		{"unused key", Case{K: 1, Keys: []Key{key(3), key(4)}, Requests: []Request{req(3)}}},
		{"huge query", Case{K: 1, Requests: []Request{{Query: Vec{Kind: VecHuge}}}}},
		{"unknown key kind", Case{K: 1, Keys: []Key{{Slot: 3, Vec: Vec{Kind: numVecKinds}}}, Requests: []Request{req(3)}}},
		{"max-finite query", Case{K: 1, Requests: []Request{{Query: Vec{Kind: VecMaxFinite}}}}},
		{"max-finite key under a normal query", Case{K: 1, Keys: []Key{{Slot: 3, Vec: Vec{Kind: VecMaxFinite}}},
			Requests: []Request{{Query: Vec{Kind: VecTiny}, Tokens: []int64{3}}, req(3)}}},
	} {
		if err := tc.c.Validate(100); err == nil {
			t.Errorf("%s: accepted", tc.name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: a multi-line error: %v", tc.name, err)
		}
	}
	for _, q := range []VecKind{VecZero, VecTiny, VecSubnormal, VecSignedZero} {
		c := Case{K: 1, Keys: []Key{{Slot: 3, Vec: Vec{Kind: VecMaxFinite}}}, Requests: []Request{{Query: Vec{Kind: q}, Tokens: []int64{3}}}}
		if err := c.Validate(100); err != nil {
			t.Errorf("a max-finite key under a %s query was refused: %v", q, err)
		}
	}
	ok := Case{K: 5, Keys: []Key{key(0), key(99)}, Requests: []Request{req(0, 99), req(), req(99)}}
	if err := ok.Validate(100); err != nil {
		t.Errorf("a valid case was refused: %v", err)
	}
}

func TestHugeVectorsStayFinite(t *testing.T) {
	for seed := range uint64(50) {
		for _, e := range (Vec{Kind: VecHuge, Seed: seed}).Data(128) {
			if e&0x7f80 == 0x7f80 {
				t.Fatalf("huge vector %d holds a non-finite bf16 %#04x", seed, e)
			}
		}
	}
}

// TestMaxFiniteKeysScoreFinite: a max-finite key, as each layout stores
// it, under every query kind that may score it, at the largest head dim,
// has Σ|q_d·k_d| within float32's range, so every partial sum of a
// float32 kernel is finite; and the key holds the largest finite value the
// layout stores (bf16's own in a bf16 pool, 448·2^119 under dsv4-main's
// power-of-two scales, where bf16's would read back as 2^128).
func TestMaxFiniteKeysScoreFinite(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    int
	}{{"bf16", layout.MaxHeadDim}, {"fp8-paged", layout.MaxHeadDim}, {"fp8-rows", layout.MaxHeadDim}, {"dsv4-main", 512}} {
		name, l := tc.name, kindtest.Layout(t, tc.name, tc.d, 16)
		top := 0.0
		for seed := range uint64(8) {
			k := DecodeKey(l, l.Encode(Vec{Kind: VecMaxFinite, Seed: seed}.KeyData(l)))
			for _, x := range k {
				top = max(top, math.Abs(x))
			}
			for _, qk := range []VecKind{VecZero, VecTiny, VecSubnormal, VecSignedZero} {
				var mag float64
				for d, e := range (Vec{Kind: qk, Seed: seed}).Data(l.HeadDim) {
					mag += math.Abs(float64(layout.BF16ToFloat32(e)) * k[d])
				}
				if !(mag < math.MaxFloat32) {
					t.Errorf("%s: a %s query against max-finite key %d sums to %g, past float32", name, qk, seed, mag)
				}
			}
		}
		if top > math.MaxFloat32 || top < 2.9e38 {
			t.Errorf("%s: max-finite keys reach %g; want the largest finite value the layout stores", name, top)
		}
		if name == "bf16" && top != float64(layout.BF16ToFloat32(0x7f7f)) {
			t.Errorf("bf16: max-finite keys reach %g, want bf16's largest finite %g", top, layout.BF16ToFloat32(0x7f7f))
		}
	}
}

// TestStoredCeilingIsTheLargest: the bisection finds the largest bf16
// magnitude each layout stores finite, as a walk down from bf16's largest
// finds it, and the next magnitude up is not stored finite.
func TestStoredCeilingIsTheLargest(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    int
	}{{"bf16", 128}, {"fp8-paged", 128}, {"fp8-rows", 64}, {"dsv4-main", 512}} {
		l := kindtest.Layout(t, tc.name, tc.d, 16)
		want := uint16(bf16MaxFinite)
		for !storedFinite(l, want) {
			want--
		}
		got := storedCeiling(l)
		if got != want {
			t.Errorf("%s: ceiling %#04x, want %#04x (the largest stored finite)", tc.name, got, want)
		}
		if got < bf16MaxFinite && storedFinite(l, got+1) {
			t.Errorf("%s: %#04x is stored finite too, above the ceiling %#04x", tc.name, got+1, got)
		}
	}
}

package read

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	sdkread "github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins"
)

// FuzzRead checks decoded read cases (Decode: every input is a valid
// case) against the plugin named by KVHARNESS_PLUGIN (default fusedstore;
// see package fuzzing). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzRead$' -fuzztime=30s ./harness/kernels/read
//
// The input's first byte picks the layout (the next one the plugin reads
// when it does not read that one); the rest is the case.
func FuzzRead(f *testing.F) { fuzzing.Fuzz(f, FuzzTarget, plugins.Servers) }

// readSeed is a minimal read case for one bug class, kept in the corpus.
type readSeed struct {
	Name, Layout string
	Case         *Case
	Why          string
}

// seedCase builds a case whose slots get normal keys seeded by their slot,
// unless keys says otherwise; queries are normal.
func seedCase(k int, keys map[int64]Vec, lists ...[]int64) *Case {
	c := &Case{K: k}
	seen := map[int64]bool{}
	for i, l := range lists {
		c.Requests = append(c.Requests, Request{Query: Vec{Kind: VecNormal, Seed: uint64(i + 1)}, Tokens: l})
		for _, s := range l {
			if !seen[s] {
				seen[s] = true
				v, ok := keys[s]
				if !ok {
					v = Vec{Kind: VecNormal, Seed: uint64(s % 256)}
				}
				c.Keys = append(c.Keys, Key{Slot: s, Vec: v})
			}
		}
	}
	return c
}

func zeroQuery(c *Case) *Case {
	c.Requests[0].Query = vec(VecZero, 0)
	return c
}

func subnormalQuery(c *Case) *Case {
	c.Requests[0].Query = vec(VecSubnormal, 1)
	return c
}

// withNonFiniteQuery gives request r a query holding ±Inf and NaN.
func withNonFiniteQuery(c *Case, r int) *Case {
	c.Requests[r].Query = vec(VecNonFinite, 2)
	return c
}

// readSeeds is FuzzRead's seed corpus: one minimal case per read bug
// class. The correct read kernels pass all of them; every read mutant
// fails at least one.
var readSeeds = []readSeed{
	{"tail-next-request", "bf16", seedCase(4, nil, []int64{1, 2, 3}, []int64{40, 41}),
		"a list shorter than k followed by another request: an unmasked tail returns the next request's tokens"},
	{"scale-paged", "fp8-paged", seedCase(1, nil, []int64{3}),
		"one fp8 key: a scale read interleaved from a packed page is a code of the next slot"},
	{"scale-rows", "fp8-rows", seedCase(1, nil, []int64{3}),
		"one fp8 key: a scale read packed from a rows layout is another slot's code"},
	{"scratch-in-sink", "bf16", seedCase(1, nil, []int64{5}),
		"one key away from slot 0: a kernel that keeps scratch in the 'unused' slot 0 changes the pool"},
	{"key-in-slot0", "fp8-rows", seedCase(2, nil, []int64{0, 1}),
		"slot 0 holds a key: reserved-slot special cases"},
	{"empty-list", "bf16", seedCase(2, nil, nil, []int64{7}),
		"an empty list: all padding, and its neighbour's bounds"},
	{"page-edge-short", "fp8-paged", seedCase(8, nil, []int64{63, 64, 65}),
		"a list across a page edge, shorter than k: padding and the scale plane of the next page"},
	{"exact-tie", "bf16", seedCase(1, map[int64]Vec{9: vec(VecNormal, 7), 4: vec(VecNormal, 7)}, []int64{9, 4}),
		"the same key in two slots: the lower slot wins the tie"},
	{"zero-query", "fp8-paged", zeroQuery(seedCase(2, nil, []int64{12, 10, 11})),
		"a zero query: every score is 0, the order is the slots'"},
	{"huge-and-zero-keys", "bf16", seedCase(2, map[int64]Vec{20: vec(VecHuge, 1), 21: vec(VecZero, 0)}, []int64{20, 21, 22}),
		"a huge key next to a zero key: range and sign"},
	{"last-slot", "fp8-rows", seedCase(1, nil, []int64{fuzzSlots - 1}),
		"the pool's last slot"},
	{"shared-slot", "bf16", seedCase(2, nil, []int64{7, 8}, []int64{8, 9}),
		"two requests share a slot (a shared prefix)"},
	{"subnormal-query", "fp8-paged", subnormalQuery(seedCase(1, map[int64]Vec{6: vec(VecHuge, 2)}, []int64{6})),
		"a subnormal query against a huge key: its products are float32 normals, which a kernel that flushes denormals loses"},
	{"max-finite-key", "bf16", zeroQuery(seedCase(1, map[int64]Vec{5: vec(VecMaxFinite, 3)}, []int64{5})),
		"a zero query against bf16's largest finite key: every score is 0, which arithmetic that overflows the key makes NaN"},
	{"non-finite-key", "bf16", seedCase(2, map[int64]Vec{40: vec(VecNonFinite, 1)}, []int64{3, 4}, []int64{40, 41}),
		"a key holding NaN in the second request's list: the contained policy frees that request alone, the first must stay exact"},
	{"non-finite-query", "fp8-rows", withNonFiniteQuery(seedCase(1, nil, []int64{5}, []int64{6}), 1),
		"a query holding NaN next to a finite request: nothing of it may reach the other request's answer"},
}

// Input encodes a seed as a fuzz input: the layout pick, then the case.
func (s readSeed) Input() []byte {
	pick := byte(slices.Index(fuzzLayouts, s.Layout))
	return append([]byte{pick}, Encode(s.Case, fuzzLimits)...)
}

// TestReadSeedCorpus keeps testdata/fuzz/FuzzRead in step with readSeeds;
// run with -update after changing a seed.
func TestReadSeedCorpus(t *testing.T) {
	for _, s := range readSeeds {
		golden.Check(t, fuzzing.CorpusFile("FuzzRead", s.Name), fuzzing.CorpusEntry(s.Input()))
		if err := s.Case.Validate(fuzzSlots); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if diff := cmp.Diff(s.Case, Decode(s.Input()[1:], fuzzLimits), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s does not decode to itself (-want +got):\n%s", s.Name, diff)
		}
	}
}

// TestReadSeedsKillEveryReadMutant replays the corpus in process against
// each bundled read kernel: the correct ones pass every seed, each read
// mutant fails at least one.
func TestReadSeedsKillEveryReadMutant(t *testing.T) {
	for _, code := range plugins.Bundled {
		if code.Kernel == nil {
			continue
		}
		if _, ok := code.Kernel.Kernel.(sdkread.Reader); !ok {
			continue
		}
		variants, correct := []string{""}, map[string]bool{"": true}
		for _, v := range code.Kernel.Variants {
			if sdkread.IsVariant(v) {
				variants, correct[v.Name] = append(variants, v.Name), v.Correct
			}
		}
		for _, v := range variants {
			killers := replayReadSeeds(t, code.Name, v)
			if mutant := !correct[v]; (len(killers) > 0) != mutant {
				t.Errorf("%s variant %q: failed seeds %v; want some iff it is a mutant", code.Name, v, killers)
			}
			t.Logf("%s %q: killed by %v", code.Name, v, killers)
		}
	}
}

// replayReadSeeds returns the seeds that fail on a plugin's variant, with
// the property each violates.
func replayReadSeeds(t *testing.T, plugin, variant string) []string {
	env := kindtest.InProcess(t, FuzzTarget, plugin, variant)
	defer env.Close()
	var killers []string
	for _, s := range readSeeds {
		_, res := kindtest.CheckSeed(t, env, s.Name, s.Input())
		if res.Failed() {
			killers = append(killers, fmt.Sprintf("%s (%s)", s.Name, res.Primary()))
		}
	}
	return killers
}

// TestFeaturesTellSeedsApart: the fuzz folder's lane is guided by the
// features of a case alone; every seed has its own.
func TestFeaturesTellSeedsApart(t *testing.T) { kindtest.FeaturesTellSeedsApart(t, FuzzTarget) }

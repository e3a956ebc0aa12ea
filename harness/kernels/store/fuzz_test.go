package store

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/workload"
	"github.com/kvharness/kvharness/plugins"
)

// FuzzStore checks decoded store cases (Decode: every input is a valid
// case) against the plugin named by KVHARNESS_PLUGIN (see package
// fuzzing). Run it with:
//
//	go test -run='^$' -fuzz='^FuzzStore$' -fuzztime=30s ./harness/kernels/store
//
// The input's first byte picks the layout; the rest is the case.
func FuzzStore(f *testing.F) { fuzzing.Fuzz(f, FuzzTarget, plugins.Servers) }

// fuzzSeed is a minimal case for one bug class, kept in the fuzzSeed corpus.
type fuzzSeed struct {
	Name   string // file name under testdata/fuzz/FuzzStore
	Layout string
	Case   *Case
	Why    string
}

func rows(kinds ...workload.RowKind) []workload.Row {
	out := make([]workload.Row, len(kinds))
	for i, k := range kinds {
		out[i] = workload.Row{Kind: k, Seed: uint64(i + 1)}
	}
	return out
}

const (
	normal  = workload.RowNormal
	zero    = workload.RowZero
	garbage = workload.RowGarbage
)

// fuzzSeeds is the fuzzSeed corpus: one minimal case per bug class kvharness
// knows. A correct plugin passes all of them; each fails at least one
// mutant.
var fuzzSeeds = []fuzzSeed{
	{"count-stale-slot", "bf16", &Case{Padding: PadCount, Valid: 1, Loc: []int64{5, 9}, Rows: rows(normal, garbage)},
		"a padded row holds a stale slot: a pad-unaware store overwrites it"},
	{"count-stale-live-slot", "bf16", &Case{Padding: PadCount, Valid: 1, Loc: []int64{5, 5}, Rows: rows(normal, garbage)},
		"the stale slot now belongs to a live row: the incident"},
	{"sink-slot0", "fp8-rows", &Case{Padding: PadSink, Valid: 1, Loc: []int64{3, 0}, Rows: rows(normal, garbage)},
		"padded rows point at the reserved slot 0 (sglang #33816)"},
	{"minus1-guard", "fp8-paged", &Case{Padding: PadMinus1, Valid: 1, Loc: []int64{3, -1}, Rows: rows(normal, garbage)},
		"padded rows hold -1: a write lands before the pool base, or wraps to the last slot"},
	{"last-slot", "fp8-paged", &Case{Padding: PadNone, Valid: 1, Loc: []int64{fuzzSlots - 1}, Rows: rows(normal)},
		"the last slot of the pool: off-by-one tails and page math at the end"},
	{"page-edge", "fp8-paged", &Case{Padding: PadNone, Valid: 2, Loc: []int64{fuzzPageSize - 1, fuzzPageSize}, Rows: rows(normal, normal)},
		"both sides of a page boundary: scale-plane offsets"},
	{"zero-row", "fp8-rows", &Case{Padding: PadNone, Valid: 1, Loc: []int64{1}, Rows: rows(zero)},
		"an all-zero row: the 1e-4 scale floor"},
	{"slot-reused", "fp8-paged", &Case{Padding: PadNone, Valid: 1, Loc: []int64{3}, Rows: rows(zero)},
		"minus1-guard's slot stored again with another row: a kernel that keeps a slot's first scale reuses it"},
	{"tail-row", "bf16", &Case{Padding: PadNone, Valid: 3, Loc: []int64{1, 2, 3}, Rows: rows(normal, normal, normal)},
		"the last valid row: off-by-one loops"},
	{"interleaved-scale", "fp8-paged", &Case{Padding: PadNone, Valid: 2, Loc: []int64{0, 1}, Rows: rows(normal, normal)},
		"neighbouring slots of a packed page: a scale written after its row overwrites the next row"},
	{"past-16-bits", "bf16", &Case{Padding: PadNone, Valid: 1, Loc: []int64{1<<16 + 5}, Rows: rows(normal)},
		"a slot index past 16 bits: a narrowed loc aliases slot 5"},
	{"padding-only", "bf16", &Case{Padding: PadSink, Valid: 0, Loc: []int64{0}, Rows: rows(garbage)},
		"a batch that is all padding"},
	{"subnormal-row", "bf16", &Case{Padding: PadNone, Valid: 1, Loc: []int64{7}, Rows: rows(workload.RowSubnormal)},
		"bf16 subnormals of both signs: a store built with denormals flushed to zero writes zeros"},
	{"signed-zero-row", "fp8-paged", &Case{Padding: PadNone, Valid: 1, Loc: []int64{11}, Rows: rows(workload.RowSignedZero)},
		"a row of +0 and -0 whose max |x| is 0: a zero-row fast path loses the sign"},
	{"ue8m0-tiles", "dsv4-main", &Case{Padding: PadCount, Valid: 2, Loc: []int64{3, 64, 9}, Rows: rows(normal, normal, garbage)},
		"power-of-two tile scales: exact ties, which nearest even decides, and the exponent's rounding direction"},
}

// Input encodes a fuzzSeed as a fuzz input: the layout pick, then the case.
func (s fuzzSeed) Input() []byte {
	return append([]byte{byte(slices.Index(fuzzLayouts, s.Layout))}, Encode(s.Case, fuzzMaxCapacity)...)
}

// TestSeedCorpus keeps testdata/fuzz/FuzzStore in step with fuzzSeeds; run
// with -update after changing a seed.
func TestSeedCorpus(t *testing.T) {
	for _, s := range fuzzSeeds {
		golden.Check(t, fuzzing.CorpusFile("FuzzStore", s.Name), fuzzing.CorpusEntry(s.Input()))
		if diff := cmp.Diff(s.Case, Decode(s.Input()[1:], fuzzSlots, fuzzPageSize, fuzzMaxCapacity)); diff != "" {
			t.Errorf("%s decodes differently (-want +got):\n%s", s.Name, diff)
		}
	}
}

// beyondCorpus are store mutants the seed corpus cannot kill in one
// in-process replay, and why; their own tests are TestHeadlineProperties.
var beyondCorpus = map[string]string{
	"tile-offset": "needs 257 rows; fuzz cases have at most 64",
	"race":        "drops a row only when its writers are starved: nondeterministic",
	// The fuzz target's pools have one geometry (head dim 128, page size
	// 64, 131,072 slots); a check draws the others and reaches past 4 GiB,
	// which kills these at a default run's first cases (the mutants golden
	// in harness/cmd/kvharness, TestMutantsTable).
	"vec16-no-tail": "needs a head dim that is not a multiple of 16; the fuzzed layouts have 128",
	"page-size-64":  "bakes in page size 64, the fuzzed pools' own",
	// Page-table addressing is not fuzzed: its cases are drawn
	// (TestPageTableStores, and a default check of the variant).
	"page-table-last-overrun": "takes page-table calls only; the fuzz target addresses by slot list",
	"offset-int32":            "needs byte offsets past 2 GiB; the fuzzed pools hold 131,072 slots",
}

// engineOnly are the engine layouts' mistakes: the fuzz target's layouts
// are the planes ones, where these variants store correctly.
// TestEngineMutantsKilled kills each on the layout it concerns.
func engineOnly(variant string) bool {
	return slices.ContainsFunc(engineMutants, func(m struct {
		variant, layout string
		heads           int
		padding         Padding
	}) bool {
		return m.variant == variant
	})
}

// TestSeedsKillEveryMutant: the corpus must hold a case for every bug
// class, so replaying it against each store mutant (in process, for
// speed) must fail at least once, and replaying it against the correct
// plugins never. A mutant that panics in process (a crasher, to go test
// -fuzz) is killed.
func TestSeedsKillEveryMutant(t *testing.T) {
	stores := plugins.Serving(Name)
	for _, code := range plugins.Bundled {
		b, _ := plugin.BundledByName(code.Name)
		if !slices.Contains(stores, code.Name) {
			continue
		}
		variants := []string{""}
		mutant := map[string]bool{"": b.Role == plugin.Reference}
		for _, v := range code.Kernel.Variants {
			if v.Kernel == "" || v.Kernel == string(Name) { // a read mutant: the read corpus's job
				variants = append(variants, v.Name)
				mutant[v.Name] = !v.Correct
			}
		}
		for _, v := range variants {
			if why, ok := beyondCorpus[v]; ok {
				t.Logf("%s variant %q: not replayed: %s", code.Name, v, why)
				continue
			}
			if engineOnly(v) {
				continue
			}
			if killed := replaySeeds(t, code.Name, v); killed != mutant[v] {
				t.Errorf("%s variant %q: killed by the fuzzSeed corpus = %v, want %v", code.Name, v, killed, mutant[v])
			}
		}
	}
}

func replaySeeds(t *testing.T, plugin, variant string) (killed bool) {
	env := kindtest.InProcess(t, FuzzTarget, plugin, variant)
	defer env.Close()
	defer func() {
		if r := recover(); r != nil {
			t.Logf("the kernel panicked in process: %v", r)
			killed = true
		}
	}()
	for _, s := range fuzzSeeds {
		_, res := kindtest.CheckSeed(t, env, s.Name, s.Input())
		if res.Failed() {
			return true
		}
	}
	return false
}

// TestFeaturesTellSeedsApart: the fuzz folder's lane is guided by the
// features of a case alone; every seed has its own.
func TestFeaturesTellSeedsApart(t *testing.T) { kindtest.FeaturesTellSeedsApart(t, FuzzTarget) }

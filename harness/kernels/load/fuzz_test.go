package load

import (
	"fmt"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/plugins"
)

// FuzzLoad checks decoded load cases against the plugin named by
// KVHARNESS_PLUGIN (default layerload; see package fuzzing): every probe's
// and reader's bytes, the pools afterwards, the gates' answers and the
// happens-before log. Run it with:
//
//	go test -run='^$' -fuzz='^FuzzLoad$' -fuzztime=30s ./harness/kernels/load
//
// A plugin without a load kernel skips it.
func FuzzLoad(f *testing.F) { fuzzing.Fuzz(f, FuzzTarget, plugins.Servers) }

// fuzzSeed is a minimal case for one bug class, kept in the FuzzLoad
// seed corpus; Kills names the layerload variant it must kill ("" for an
// edge every variant may pass).
type fuzzSeed struct {
	Name  string
	Kills string
	Case  *Case
}

func seed(op Op, layers, first int, buffers []string, pages []Page) *Case {
	return &Case{Geometry: fuzzBase, Op: op, Layers: layers, FirstLayer: first, Buffers: buffers, Order: canonicalOrder(buffers), Pages: pages}
}

func with(c *Case, f func(*Case)) *Case { f(c); return c }

var (
	kv    = []string{BufferKV}
	page0 = []Page{{0, 0}}
)

// fuzzSeeds is the FuzzLoad seed corpus: the minimal schedule of each
// mutant, and an edge the generator seldom draws.
var fuzzSeeds = []fuzzSeed{
	{"indexk-late", "indexk-gate-missing", with(seed(OpLoad, 1, 0, []string{BufferKV, BufferIndexK}, page0), func(c *Case) { c.Late = []Item{{0, BufferIndexK, 0}} })},
	{"wait-before-record", "wait-before-record", with(seed(OpLoad, 1, 0, kv, page0), func(c *Case) { c.Late = []Item{{0, BufferKV, 0}} })},
	{"record-early", "record-before-copies", with(seed(OpLoad, 1, 0, []string{BufferScales}, page0), func(c *Case) { c.Late = []Item{{0, BufferScales, 0}} })},
	{"record-stream", "record-wrong-stream", with(seed(OpLoad, 1, 0, kv, []Page{{3, 5}}), func(c *Case) { c.Late = []Item{{0, BufferKV, 0}} })},
	{"second-layer-late", "gate-previous-layer", with(seed(OpLoad, 2, 0, kv, page0), func(c *Case) { c.Late = []Item{{1, BufferKV, 0}} })},
	{"ring-of-three", "ring-reuse", with(seed(OpLoad, 1, 0, kv, []Page{{0, 0}, {1, 1}, {2, 2}}), func(c *Case) { c.Late = []Item{{0, BufferKV, 0}} })},
	{"pipeline-stage", "counter-global-id", with(seed(OpLoad, 2, 1, kv, page0), func(c *Case) { c.Late = []Item{{1, BufferKV, 0}} })},
	{"failed-copy", "done-on-failure", with(seed(OpLoad, 1, 0, kv, page0), func(c *Case) { c.Fail = []Item{{0, BufferKV, 0}} })},
	{"store-late", "store-no-join", with(seed(OpStore, 1, 0, kv, page0), func(c *Case) { c.Late = []Item{{0, BufferKV, 0}} })},
	{"store-input-late", "store-no-fork", with(seed(OpStore, 1, 0, kv, page0), func(c *Case) { c.LateInputs = []Item{{0, BufferKV, 0}} })},
	{"reader-holds", "load-overwrites-reader", with(seed(OpLoad, 1, 0, kv, page0), func(c *Case) { c.Readers = []int{0} })},
	{"shuffled-everything", "", with(seed(OpLoad, 4, 7, []string{BufferKV, BufferIndexK, BufferScales}, []Page{{7, 0}, {0, 7}, {4, 4}, {1, 2}}),
		func(c *Case) {
			c.Order = []string{BufferScales, BufferKV, BufferIndexK}
			c.Late = []Item{{3, BufferIndexK, 3}, {2, BufferKV, 0}}
		})},
}

// Entry implements kindtest.Seed.
func (s fuzzSeed) Entry() (name, kills string, input []byte) { return s.Name, s.Kills, s.Input() }

// Input encodes a seed as a fuzz input.
func (s fuzzSeed) Input() []byte {
	data, err := Encode(s.Case, fuzzBase)
	if err != nil {
		panic(fmt.Sprintf("seed %s: %v", s.Name, err))
	}
	return data
}

// TestLoadSeedCorpus keeps testdata/fuzz/FuzzLoad in step with fuzzSeeds
// (run with -update after changing a seed), and each seed decodes to its
// case.
func TestLoadSeedCorpus(t *testing.T) {
	for _, s := range fuzzSeeds {
		if err := s.Case.Validate(0); err != nil {
			t.Fatalf("seed %s: %v", s.Name, err)
		}
		golden.Check(t, fuzzing.CorpusFile("FuzzLoad", s.Name), fuzzing.CorpusEntry(s.Input()))
		if c := Decode(s.Input(), fuzzBase); c.String() != s.Case.String() {
			t.Errorf("%s decodes to %v, want %v", s.Name, c, s.Case)
		}
	}
}

// TestDecodeAlwaysValid: any bytes decode to a valid case.
func TestDecodeAlwaysValid(t *testing.T) {
	rng := randFor(3)
	for range 5000 {
		data := make([]byte, rng.Intn(40))
		rng.Read(data)
		if c := Decode(data, fuzzBase); c.Validate(0) != nil {
			t.Fatalf("% x decodes to %v: %v", data, c, c.Validate(0))
		}
	}
}

// TestLoadSeedsKillEveryMutant: the correct variants pass every seed, and
// each mutant is killed by the seed made for it (in process, for speed).
func TestLoadSeedsKillEveryMutant(t *testing.T) {
	kindtest.SeedsKillMutantsBut(t, FuzzTarget, "layerload", fuzzSeeds, beyondCorpus)
}

// beyondCorpus are layerload mutants the seed corpus cannot kill, and
// why; their own test is TestOffsetInt32KilledOnlyFar.
var beyondCorpus = map[string]string{
	"offset-int32": "needs page offsets past 2 GiB; the fuzzed pools hold eight pages",
}

// TestFeaturesTellSeedsApart: the fuzz folder's lane is guided by the
// features of a case alone; every seed has its own.
func TestFeaturesTellSeedsApart(t *testing.T) { kindtest.FeaturesTellSeedsApart(t, FuzzTarget) }

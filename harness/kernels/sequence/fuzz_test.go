package sequence

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/plugins"
)

// FuzzSequence checks decoded sequences against the plugin named by
// KVHARNESS_PLUGIN (default fusedstore; see package fuzzing): every live
// page's ownership after every step. Run it with:
//
//	go test -run='^$' -fuzz='^FuzzSequence$' -fuzztime=30s ./harness/kernels/sequence
func FuzzSequence(f *testing.F) { fuzzing.Fuzz(f, FuzzTarget, plugins.Servers) }

// fuzzSeed is a minimal sequence for one bug class, kept in the
// FuzzSequence seed corpus; Plugin and Kills name what it must kill (""
// for an edge every correct store passes).
type fuzzSeed struct {
	Name, Plugin, Kills string
	Steps               []Step
}

func arrive(req, tokens int) Step { return Step{Op: OpArrive, Req: req, Tokens: tokens} }
func decode(reqs ...int) Step     { return Step{Op: OpDecode, Batch: reqs} }
func op(o Op, req int) Step       { return Step{Op: o, Req: req} }
func read(reqs ...int) Step       { return Step{Op: OpRead, Batch: reqs} }
func share(req, tokens, from, shared int) Step {
	return Step{Op: OpArrive, Req: req, Tokens: tokens, From: from, Shared: shared}
}

var fuzzSeeds = []fuzzSeed{
	// a batch of 4 leaves r4's slot in row 3 of the capacity-4 graph's
	// static tensor; r4 leaves, r5 takes its page, and a batch of 3
	// replays row 3's stale slot onto r5's token
	{"incident", "bf16scatter", "", []Step{arrive(1, 1), arrive(2, 1), arrive(3, 1), arrive(4, 1), decode(1, 2, 3, 4),
		op(OpFinish, 4), arrive(5, 1), decode(5, 1, 2)}},
	{"graph-replay", "gostore", "graph-last-slots", []Step{arrive(1, 1), decode(1)}},
	{"prefill", "gostore", "late-landing", []Step{arrive(1, 2)}},
	{"offload", "gostore", "lazy-source", []Step{arrive(1, 2), op(OpEvict, 1), op(OpLoad, 1)}},
	{"load-back", "gostore", "host-copy-released", []Step{arrive(1, 3), decode(1), op(OpEvict, 1), op(OpLoad, 1)}},
	{"decode-staging", "gostore", "pinned-staging-reuse", []Step{arrive(1, 1), arrive(2, 1), arrive(3, 1), decode(1, 2, 3)}},
	{"shared-prefix", "gostore", "first-token-back", []Step{arrive(1, 8), share(2, 9, 1, 8)}},
	{"two-layouts", "gostore", "kernel-cache-no-stride", []Step{arrive(1, 3), arrive(2, 3), decode(1, 2)}},
	{"stale-page-read", "gostore", "stale-read-cache", []Step{arrive(1, 1), read(1), op(OpFinish, 1), arrive(2, 1), read(2)}},
	{"resent-transfer", "gostore", "transfer-resend", []Step{arrive(1, 1), op(OpTransfer, 1), arrive(2, 1), op(OpTransfer, 2)}},
	{"copy-on-write", "", "", []Step{arrive(1, 6), share(2, 8, 1, 5), decode(2, 1)}},
	{"abort-reuse", "", "", []Step{arrive(1, 5), op(OpAbort, 1), arrive(2, 5), decode(2)}},
}

func (s fuzzSeed) Case() *Case { return &Case{Geometry: fuzzBase, Steps: s.Steps} }

// Entry implements kindtest.Seed.
func (s fuzzSeed) Entry() (name, kills string, input []byte) { return s.Name, s.Kills, s.Input() }

// Input encodes a seed as a fuzz input.
func (s fuzzSeed) Input() []byte {
	data, err := Encode(s.Case(), fuzzBase)
	if err != nil {
		panic(fmt.Sprintf("seed %s: %v", s.Name, err))
	}
	return data
}

// TestSequenceSeedCorpus keeps testdata/fuzz/FuzzSequence in step with
// fuzzSeeds (run with -update after changing a seed).
func TestSequenceSeedCorpus(t *testing.T) {
	for _, s := range fuzzSeeds {
		if err := s.Case().Validate(0); err != nil {
			t.Fatalf("seed %s: %v", s.Name, err)
		}
		golden.Check(t, fuzzing.CorpusFile("FuzzSequence", s.Name), fuzzing.CorpusEntry(s.Input()))
	}
}

// TestSeedsKill: fusedstore and gostore pass every seed; each seed made
// for a plugin's bug fails it, in a fresh in-process plugin.
func TestSeedsKill(t *testing.T) {
	for _, plugin := range []string{"fusedstore", "gostore"} {
		env := kindtest.InProcess(t, FuzzTarget, plugin, "")
		for _, s := range fuzzSeeds {
			if _, res := kindtest.CheckSeed(t, env, s.Name, s.Input()); res.Failed() {
				t.Errorf("%s fails seed %s: %v", plugin, s.Name, res.Violations)
			}
		}
		env.Close()
	}
	for _, s := range fuzzSeeds {
		if s.Plugin == "" {
			continue
		}
		env := kindtest.InProcess(t, FuzzTarget, s.Plugin, s.Kills)
		if c, res := kindtest.CheckSeed(t, env, s.Name, s.Input()); !res.Failed() {
			t.Errorf("%s %q survives its seed %s: %v", s.Plugin, s.Kills, s.Name, c)
		} else {
			t.Logf("%s %s: %v", s.Plugin, s.Kills, res.Violations[0])
		}
		env.Close()
	}
}

// TestEveryLifecycleMutantHasASeed: each of gostore's sequence variants
// has a seed made to kill it.
func TestEveryLifecycleMutantHasASeed(t *testing.T) {
	code, _ := plugins.Lookup("gostore")
	for _, v := range code.Kernel.Variants {
		if v.Kernel != string(Name) {
			continue
		}
		found := false
		for _, s := range fuzzSeeds {
			found = found || s.Kills == v.Name
		}
		if !found {
			t.Errorf("gostore %s: no seed is made to kill it", v.Name)
		}
	}
}

// TestDecodeAlwaysValid: any bytes decode to a valid sequence.
func TestDecodeAlwaysValid(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for range 5000 {
		data := make([]byte, rng.Intn(120))
		rng.Read(data)
		if c := Decode(data, fuzzBase); c.Validate(0) != nil {
			t.Fatalf("% x decodes to %v: %v", data, c, c.Validate(0))
		}
	}
}

// TestFeaturesTellSeedsApart: the fuzz folder's lane is guided by the
// features of a case alone; every seed has its own.
func TestFeaturesTellSeedsApart(t *testing.T) { kindtest.FeaturesTellSeedsApart(t, FuzzTarget) }

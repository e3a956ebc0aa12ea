package fuzz

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/workload"
)

var update = flag.Bool("update", false, "rewrite the seed corpus files from Seeds")

func corpusFile(s Seed) string { return filepath.Join("testdata", "fuzz", "FuzzStore", s.Name) }

func corpusEntry(s Seed) []byte { return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", s.Input()) }

// TestSeedCorpus keeps testdata/fuzz/FuzzStore in step with Seeds; run
// with -update after changing a seed.
func TestSeedCorpus(t *testing.T) {
	for _, s := range Seeds {
		if *update {
			os.MkdirAll(filepath.Dir(corpusFile(s)), 0o755)
			if err := os.WriteFile(corpusFile(s), corpusEntry(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(corpusFile(s))
		if err != nil || string(got) != string(corpusEntry(s)) {
			t.Errorf("%s: corpus file missing or stale (%v); run go test ./fuzz -run TestSeedCorpus -update", s.Name, err)
		}
		c := workload.Decode(s.Input()[1:], Slots, PageSize, MaxCapacity)
		if diff := cmp.Diff(s.Case, c); diff != "" {
			t.Errorf("%s decodes differently (-want +got):\n%s", s.Name, diff)
		}
	}
}

// TestSeedsKillEveryMutant: the corpus must hold a case for every bug
// class, so replaying it against each mutant (in process, for speed) must
// fail at least once, and replaying it against the correct plugins never.
func TestSeedsKillEveryMutant(t *testing.T) {
	for name, p := range inProcess {
		variants := []sdk.Variant{{}}
		variants = append(variants, p.Variants...)
		for _, variant := range variants {
			if sdk.IsReadVariant(variant) {
				continue // a read mutant: TestReadSeedsKillEveryReadMutant replays the read corpus against it
			}
			v := variant.Name
			mutant := (v != "" && !variant.Correct) || name == "bf16scatter"
			t.Setenv("KVHARNESS_PLUGIN", name)
			t.Setenv("KVHARNESS_VARIANT", v)
			t.Setenv("KVHARNESS_FUZZ_MODE", "in-process")
			killed := replaySeeds(t)
			if killed != mutant {
				t.Errorf("%s variant %q: killed by the seed corpus = %v, want %v", name, v, killed, mutant)
			}
		}
	}
}

func replaySeeds(t *testing.T) bool {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for _, s := range Seeds {
		_, res, err := env.Check(context.Background(), s.Input())
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if res.Failed() {
			return true
		}
	}
	return false
}

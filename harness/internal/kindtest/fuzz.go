package kindtest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/fuzzing/remote"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/workload"
	"github.com/kvharness/kvharness/plugins"
)

// InProcess is a fuzz env of target on a variant of a bundled plugin,
// linked into the test's process: the seed corpus tests replay every
// variant, and starting a process for each would cost them most of their
// time. The caller closes it.
func InProcess[T fuzzing.Checker[C, R], C workload.Case, R report.Result](t *testing.T, target *fuzzing.Target[T, C, R],
	plugin, variant string) *fuzzing.Env[T, C, R] {
	t.Helper()
	t.Setenv("KVHARNESS_PLUGIN", plugin)
	t.Setenv("KVHARNESS_VARIANT", variant)
	t.Setenv("KVHARNESS_FUZZ_MODE", "in-process")
	env, err := fuzzing.NewEnv(context.Background(), target, plugins.Servers)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// CheckSeed checks the seed called name, input, on env, as the seed
// corpus tests replay their seeds; an error ends the test, naming the
// plugin, variant and seed.
func CheckSeed[T fuzzing.Checker[C, R], C workload.Case, R report.Result](t testing.TB, env *fuzzing.Env[T, C, R], name string,
	input []byte) (C, R) {
	t.Helper()
	_, c, res, err := env.Check(context.Background(), input)
	if err != nil {
		t.Fatalf("%s %q, seed %s: %v", env.Plugin, env.Variant, name, err)
	}
	return c, res
}

// A Seed is an entry of a kind's seed corpus, as SeedsKillMutants
// replays it.
type Seed interface {
	// Entry is the seed's name, the variant it is made to kill ("" for
	// an edge every variant may pass) and its fuzz input.
	Entry() (name, kills string, input []byte)
}

// SeedsKillMutants replays every seed, in process, on the bundled plugin
// called plugin and on each of its variants: the plugin and its correct
// variants must pass every seed, and every other variant must have a seed
// made to kill it and fail each one.
func SeedsKillMutants[T fuzzing.Checker[C, R], C workload.Case, R report.Result, S Seed](t *testing.T, target *fuzzing.Target[T, C, R],
	plugin string, seeds []S) {
	t.Helper()
	SeedsKillMutantsBut(t, target, plugin, seeds, nil)
}

// SeedsKillMutantsBut is SeedsKillMutants for the mutants not in beyond,
// which the corpus cannot kill (beyond says why: a far pool the fuzzed
// geometry does not reach); each is logged instead.
func SeedsKillMutantsBut[T fuzzing.Checker[C, R], C workload.Case, R report.Result, S Seed](t *testing.T, target *fuzzing.Target[T, C, R],
	plugin string, seeds []S, beyond map[string]string) {
	t.Helper()
	code, ok := plugins.Lookup(plugin)
	if !ok || code.Kernel == nil {
		t.Fatalf("no bundled Go plugin %q", plugin)
	}
	variants := append([]sdk.Variant{{}}, code.Kernel.Variants...)
	for _, v := range variants {
		if why, ok := beyond[v.Name]; ok {
			t.Logf("%s %q: not replayed: %s", plugin, v.Name, why)
			continue
		}
		env := InProcess(t, target, plugin, v.Name)
		killers := 0
		for _, s := range seeds {
			name, kills, input := s.Entry()
			c, res := CheckSeed(t, env, name, input)
			switch {
			case (v.Name == "" || v.Correct) && res.Failed():
				t.Errorf("%s %q fails seed %s (%v): %v", plugin, v.Name, name, c, res)
			case v.Name != "" && !v.Correct && kills == v.Name:
				killers++
				if !res.Failed() {
					t.Errorf("%s %q survives its seed %s: %v", plugin, v.Name, name, c)
				}
			}
		}
		if v.Name != "" && !v.Correct && killers == 0 {
			t.Errorf("%s %q: no seed is made to kill it", plugin, v.Name)
		}
		env.Close()
	}
}

// FeaturesTellSeedsApart: the out-of-process lane's only guidance is the
// names target.Features gives a case, so each seed of the committed
// corpus (a minimal case per bug class) must get some, and no two seeds
// the same ones.
func FeaturesTellSeedsApart[T fuzzing.Checker[C, R], C workload.Case, R report.Result](t *testing.T, target *fuzzing.Target[T, C, R]) {
	t.Helper()
	seeds, err := remote.ReadCorpus(fuzzing.CorpusFile(target.Name, ""))
	if err != nil || len(seeds) < 2 {
		t.Fatalf("%s's corpus: %d seeds, %v", target.Name, len(seeds), err)
	}
	seen := map[string]string{}
	for _, in := range seeds {
		var pick string
		if target.Layouts != nil && len(in) > 0 {
			pick, in = target.Layouts[int(in[0])%len(target.Layouts)], in[1:]
		}
		c := target.Decode(in)
		names := target.Features(c)
		if len(names) == 0 {
			t.Errorf("%s: no features for %v", target.Name, c)
		}
		slices.Sort(names)
		key := pick + " " + strings.Join(names, " ")
		if other, ok := seen[key]; ok {
			t.Errorf("%s: seeds %v and %v have the same features %q", target.Name, other, c, names)
		}
		seen[key] = c.String()
	}
}

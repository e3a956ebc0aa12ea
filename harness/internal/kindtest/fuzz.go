package kindtest

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/workload"
)

// InProcess is a fuzz env of target on a variant of a bundled plugin,
// linked into the test's process: the seed corpus tests replay every
// variant, and starting a process for each would cost them most of their
// time. The caller closes it.
func InProcess[T property.Target, C workload.Case, R report.Result](t *testing.T, target *fuzzing.Target[T, C, R],
	plugin, variant string) *fuzzing.Env[T, C, R] {
	t.Helper()
	t.Setenv("KVHARNESS_PLUGIN", plugin)
	t.Setenv("KVHARNESS_VARIANT", variant)
	t.Setenv("KVHARNESS_FUZZ_MODE", "in-process")
	env, err := fuzzing.NewEnv(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// CheckSeed checks the seed called name, input, on env, as the seed
// corpus tests replay their seeds; an error ends the test, naming the
// plugin, variant and seed.
func CheckSeed[T property.Target, C workload.Case, R report.Result](t testing.TB, env *fuzzing.Env[T, C, R], name string,
	input []byte) (C, R) {
	t.Helper()
	_, c, res, err := env.Check(context.Background(), input)
	if err != nil {
		t.Fatalf("%s %q, seed %s: %v", env.Plugin, env.Variant, name, err)
	}
	return c, res
}

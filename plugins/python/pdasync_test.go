package python

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/pdasync"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/internal/testtier"
)

// pyasyncSuite runs the pdasync suite on pyasync, the engine written
// against the Python SDK's pdasync support: a prefill and a decode Python
// process, each mapping its arenas, the harness between them.
func pyasyncSuite(t *testing.T, variant string, cases int) {
	t.Helper()
	python(t)
	dir := runDir(t)
	p := start(t, dir, "pyasync/kvharness-plugin.json", variant)
	s, err := pdasync.Suite(&kind.Session{Plugin: p, Dir: dir}, kind.Params{Variant: variant, Cases: cases, Seed: 1, StopAtFirst: variant != "", Setup: kind.Setup{Backend: arena.SHM{}}},
		pdasync.SuiteConfig{Profiles: []string{pdasync.ProfileMixed, pdasync.ProfileAborts}})
	noErr(t, err)
	vs, err := s.Run(context.Background())
	noErr(t, err)
	for _, v := range vs {
		o := v.Outcome
		switch {
		case variant == "" && !o.Passed():
			t.Errorf("pyasync fails %s after %d cases: %+v", v.Label, o.Cases, o.Failure)
		case variant != "" && o.Failure != nil:
			t.Logf("pyasync %s killed by %s after %d cases", variant, o.Failure.Property, o.Cases)
			return
		}
	}
	if variant != "" {
		t.Errorf("pyasync %s survived", variant)
	}
}

// TestPyasyncPasses: the Python engine passes the pdasync properties.
func TestPyasyncPasses(t *testing.T) {
	quick(t)
	pyasyncSuite(t, "", rowCases(15, 8))
}

// TestPyasyncMutantsDie: each of its mutants is killed, as the Go
// plugin's are.
func TestPyasyncMutantsDie(t *testing.T) {
	t.Parallel()
	testtier.FullOnly(t, "the mutants of the Python engine take ten seconds")
	for _, v := range []string{"abort-frees-in-flight", "first-component-done", "first-failure-frees", "virtual-as-physical", "poll-as-completion"} {
		pyasyncSuite(t, v, 100)
	}
}

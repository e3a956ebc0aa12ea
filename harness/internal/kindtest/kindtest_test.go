package kindtest

import (
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
)

func TestLayouts(t *testing.T) {
	ls := Layouts(t, 128, 64, "bf16", "bf16")
	if len(ls) != 2 || ls[0].Name != "bf16" || ls[0].HeadDim != 128 || ls[0].PageSize != 64 {
		t.Fatalf("layouts %+v; want two bf16 at D=128, P=64", ls)
	}
	if Layouts(t, 128, 64) != nil {
		t.Error("no names gave layouts")
	}
}

// TestLayoutFailsAnUnknownName runs Layout on a recording TB: a name that
// is not a built-in must fail the test, not return nil.
func TestLayoutFailsAnUnknownName(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() { recover() }() // Fatal ends the goroutine's function: stand in with a panic
		Layout(r, "no-such-layout", 128, 64)
	}()
	if !r.failed {
		t.Error("an unknown layout did not fail the test")
	}
}

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) {
	r.failed = true
	panic("fatal")
}

type fakeResult struct{ primary oracle.Kind }

func (r fakeResult) Failed() bool           { return r.primary != "" }
func (r fakeResult) Has(k oracle.Kind) bool { return k == r.primary }
func (r fakeResult) Primary() oracle.Kind   { return r.primary }

// errRecorder records Errorf, so that a test can see Replays fail one.
type errRecorder struct {
	testing.TB
	errors int
}

func (r *errRecorder) Helper()               {}
func (r *errRecorder) Errorf(string, ...any) { r.errors++ }

// TestReplays: a mutant that fails its property and a correct variant
// that passes are right; a mutant failing another property, or a correct
// variant failing, is an error each.
func TestReplays(t *testing.T) {
	results := map[string]fakeResult{"mutant": {"page"}, "": {}, "other": {"guard"}, "broken": {"page"}}
	check := func(v string) (fakeResult, error) { return results[v], nil }
	r := &errRecorder{TB: t}
	Replays(r, map[string]bool{"mutant": true, "": false}, "page", check)
	if r.errors != 0 {
		t.Errorf("right replays gave %d errors", r.errors)
	}
	Replays(r, map[string]bool{"other": true, "broken": false}, "page", check)
	if r.errors != 2 {
		t.Errorf("two wrong replays gave %d errors, want 2", r.errors)
	}
}

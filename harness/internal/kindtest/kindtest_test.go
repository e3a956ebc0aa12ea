package kindtest

import "testing"

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

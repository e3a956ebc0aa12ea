package kind

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
)

type fakeResult struct{ failed bool }

func (r fakeResult) Failed() bool         { return r.failed }
func (r fakeResult) Has(oracle.Kind) bool { return false }
func (r fakeResult) Primary() oracle.Kind { return "" }

// fakeSystem is a row's system that records whether it was closed.
type fakeSystem struct {
	profile string
	closed  bool
}

func (s *fakeSystem) Close(context.Context)                          { s.closed = true }
func (s *fakeSystem) Draw(*rand.Rand) int                            { return 0 }
func (s *fakeSystem) Shrink(int) []int                               { return nil }
func (s *fakeSystem) Check(context.Context, int) (fakeResult, error) { return fakeResult{}, nil }
func (s *fakeSystem) Restart(context.Context) error                  { return nil }

var errNoGeometry = errors.New("no such geometry")

// Target opens a target of geometry g; "bad" fails.
func (s *fakeSystem) Target(_ context.Context, g string) (int, error) {
	if g == "bad" {
		return 0, errNoGeometry
	}
	return len(g), nil
}

func TestProfileRowsDefaultsAndOpens(t *testing.T) {
	open := func(_ context.Context, _ *plugin.Plugin, profile string) (*fakeSystem, error) {
		return &fakeSystem{profile: profile}, nil
	}
	for _, tc := range []struct {
		given, want []string
	}{
		{nil, []string{"a", "b"}},
		{[]string{"c"}, []string{"c"}},
	} {
		rows := ProfileRows[int, fakeResult](nil, tc.given, []string{"a", "b"}, open)
		var got []string
		for _, r := range rows {
			if r.Label != r.Key {
				t.Errorf("row %q: key %q, want its label", r.Label, r.Key)
			}
			sys, err := r.Open(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if sys.profile != r.Label || r.System(sys) != sys {
				t.Errorf("row %q opened a system of profile %q", r.Label, sys.profile)
			}
			got = append(got, r.Label)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("profiles %v: rows %v, want %v", tc.given, got, tc.want)
		}
	}
}

func TestWarmedClosesOnError(t *testing.T) {
	ctx := context.Background()
	sys := &fakeSystem{}
	got, err := Warmed(ctx, sys, "good")
	if err != nil || got != sys || sys.closed {
		t.Fatalf("target opened: got %v, %v, closed %v; want the system, open", got, err, sys.closed)
	}
	got, err = Warmed(ctx, sys, "bad")
	if !errors.Is(err, errNoGeometry) || got != nil || !sys.closed {
		t.Fatalf("target failed: got %v, %v, closed %v; want nil, the error, closed", got, err, sys.closed)
	}
}

// TestCheckOnOpensTheCaseGeometry: CheckOn checks on the target of the
// geometry it is given, and passes a target's error on without checking.
func TestCheckOnOpensTheCaseGeometry(t *testing.T) {
	ctx := context.Background()
	sys := &fakeSystem{}
	checked := 0
	check := func(target int, _ context.Context, c int) (fakeResult, error) {
		checked = target
		return fakeResult{failed: c != target}, nil
	}
	res, err := CheckOn(ctx, sys.Target, check, "four", 4)
	if err != nil || checked != 4 || res.Failed() {
		t.Fatalf("geometry %q: checked on %d, %v, %v; want on target 4, passing", "four", checked, res, err)
	}
	checked = 0
	if _, err := CheckOn(ctx, sys.Target, check, "bad", 3); !errors.Is(err, errNoGeometry) || checked != 0 {
		t.Fatalf("bad geometry: %v, checked on %d; want the target's error, no check", err, checked)
	}
}

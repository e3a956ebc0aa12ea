package read

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/property"
	"github.com/kvharness/kvharness/internal/testtier"
)

// testSuite is a read suite's settings, as the tests vary them.
type testSuite struct {
	kind.Params
	session *kind.Session
}

func (s *testSuite) Run(ctx context.Context) ([]property.Verdict[*Case, *Result], error) {
	return Suite(s.session, s.Params, Config{}).Run(ctx)
}

func readSuite(t *testing.T, name, variant string, cases int, layouts ...string) *testSuite {
	t.Helper()
	p, dir := plugintest.Start(t, name)
	s := &testSuite{session: &kind.Session{Plugin: p, Dir: dir}, Params: kind.Params{Variant: variant, Cases: cases, Seed: 1, Setup: kind.Setup{Slots: 4096, Backend: arena.SHM{}}}}
	s.Layouts = kindtest.Layouts(t, 128, 64, layouts...)
	return s
}

// readPlugins are the correct read kernels and the layouts they read.
var readPlugins = []struct {
	plugin  string
	layouts []string
}{
	{"fusedstore", []string{"bf16", "fp8-paged", "fp8-rows"}},
	{"fp8store", []string{"fp8-paged", "fp8-rows"}},
}

func TestReadCorrectPluginsPass(t *testing.T) {
	cases := testtier.Pick(30, 60, 200)
	for _, tc := range readPlugins {
		vs, err := readSuite(t, tc.plugin, "", cases, tc.layouts...).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != len(tc.layouts) {
			t.Fatalf("%s: %d verdicts", tc.plugin, len(vs))
		}
		for _, v := range vs {
			if !v.Outcome.Passed() || v.Outcome.Cases != cases {
				t.Errorf("%s %s: %d cases, failure %+v", tc.plugin, v.Layout.Name, v.Outcome.Cases, failureOf(v.Outcome))
			}
		}
	}
}

func failureOf(o *property.Outcome[*Case, *Result]) any {
	if o.Failure == nil {
		return o.Fault
	}
	return o.Failure.Minimal.Violations
}

// readMutants are the read mutants, the layouts that show them, the
// property that must kill each and the most requests its minimal case
// may keep.
var readMutants = []struct {
	plugin, variant string
	layouts         []string
	kills           []oracle.Kind
	requests        int
}{
	{"fusedstore", "unmasked-tail", []string{"bf16", "fp8-rows"}, []oracle.Kind{TopK}, 2},
	{"fusedstore", "writes-scratch", []string{"bf16", "fp8-paged"}, []oracle.Kind{Scratch, ReadOnly}, 1},
	{"fp8store", "scale-stride", []string{"fp8-paged", "fp8-rows"}, []oracle.Kind{Score}, 1},
	// A subnormal query against a huge key: the keys' and queries' value
	// classes are the store's.
	{"fp8store", "denormals-are-zero", []string{"fp8-paged", "fp8-rows"}, []oracle.Kind{Score}, 1},
	// A request's NaN score reaches the others through the call's range:
	// a NaN-holding request and a finite one.
	{"fusedstore", "nan-shared-range", []string{"bf16", "fp8-paged", "fp8-rows"}, []oracle.Kind{Score}, 2},
}

// TestReadMutantsKilled: every read mutant fails on every layout that can
// show it, by the property that describes it, and shrinks to a case of a
// request or two with one or two tokens.
func TestReadMutantsKilled(t *testing.T) {
	for _, m := range readMutants {
		s := readSuite(t, m.plugin, m.variant, 200, m.layouts...)
		vs, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			f := v.Outcome.Failure
			if f == nil || f.Flaky {
				t.Errorf("%s %s: survived %d cases", m.variant, v.Layout.Name, v.Outcome.Cases)
				continue
			}
			c := f.Case
			if !kindIn(f.Property, m.kills) || len(c.Requests) > m.requests || c.TotalTokens() > 2 {
				t.Errorf("%s %s: killed by %s, shrunk to %v; want %v, ≤ %d requests, ≤ 2 tokens",
					m.variant, v.Layout.Name, f.Property, c, m.kills, m.requests)
			}
			t.Logf("%s %s: %s at case %d after %v, shrunk in %d steps to %v", m.variant, v.Layout.Name, f.Property, v.Outcome.Cases, v.Outcome.ToFailure.Round(time.Millisecond), f.Shrinks, c)
		}
	}
}

func kindIn(k oracle.Kind, ks []oracle.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func TestReadVariantConvention(t *testing.T) {
	s := readSuite(t, "fusedstore", "", 1)
	d, err := s.session.Plugin.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range d.Variants {
		if v.Kernel == Name {
			names = append(names, v.Name)
		}
	}
	serves := d.Serves(Name)
	if !slices.Equal(names, []string{"unmasked-tail", "writes-scratch", "keys-prescaled", "nan-shared-range"}) || !serves {
		t.Errorf("fusedstore read variants %v, serves reads %v", names, serves)
	}
}

// TestReadTenThousand is the long run: 10,000 cases per layout against
// the correct read kernels. Set KVHARNESS_LONG=1 to run it (KVHARNESS_READ_CASES
// changes the count); it logs the time per layout.
func TestReadTenThousand(t *testing.T) {
	if os.Getenv("KVHARNESS_LONG") == "" || testing.Short() {
		t.Skip("set KVHARNESS_LONG=1 to run 10,000 read cases per layout")
	}
	cases := 10000
	if n, err := strconv.Atoi(os.Getenv("KVHARNESS_READ_CASES")); err == nil && n > 0 {
		cases = n
	}
	for _, tc := range readPlugins {
		for _, l := range tc.layouts {
			start := time.Now()
			vs, err := readSuite(t, tc.plugin, "", cases, l).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			o := vs[0].Outcome
			if !o.Passed() || o.Cases != cases {
				t.Errorf("%s %s: %d cases, failure %+v", tc.plugin, l, o.Cases, failureOf(o))
			}
			t.Logf("%s %s: %d cases in %v (%.0f cases/s)", tc.plugin, l, o.Cases, time.Since(start).Round(time.Millisecond),
				float64(o.Cases)/time.Since(start).Seconds())
		}
	}
}

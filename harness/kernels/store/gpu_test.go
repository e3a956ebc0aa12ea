package store

import (
	"cmp"
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/property"
)

// TestAheadOnCUDA: checking ahead works on device memory. On a correct
// kernel every case after the first exact ones gets its verdict from a
// window and no window is tainted; each pad-unaware mutant (one writes
// the last slot, far from every footprint, which only the window's proof
// sees) fails at the same case, with the same violations, as exact checks
// of the same draws. TestAheadMatchesExact is the same on the host.
//
// On a GPU a mutant's padded rows race for the slot they share, 16 bytes
// at a time: two runs of the same case may leave other rows' bytes there,
// split at other offsets, and a determinism violation appears when the two
// runs of a check raced differently (on an H200, sink-writes' slot 0 held
// row 41's bytes from offset 128 in one run and row 32's from 0 in the
// other; minus1-wraps showed determinism in one run only). There the
// violations must agree in kind, field and slot, leaving out determinism.
func TestAheadOnCUDA(t *testing.T) {
	aheadMatchesExact(t, arena.CUDA{Dev: cudatest.Device(t)}, AutoSets, 120, samePlaces)
}

// aheadMatchesExact checks, on backend, a correct kernel and mutants that
// fail under some paddings and pass under others (so that checking ahead
// runs for them too) twice: exactly, and ahead on sets pool sets. same
// says when a failing case's violations agree.
func aheadMatchesExact(t *testing.T, backend arena.Backend, sets, budget int, same func(a, b []oracle.Violation) bool) {
	for _, variant := range []string{"", "sink-writes", "minus1-wraps"} {
		t.Run("variant="+cmp.Or(variant, "correct"), func(t *testing.T) {
			type failure struct {
				padding Padding
				at      int
				res     *Result
			}
			run := func(sets int) ([]failure, *Target) {
				p, dir := plugintest.Start(t, "fusedstore")
				tg, err := Open(context.Background(), p, dir, Config{Variant: variant, Layout: kindtest.Layout(t, "bf16", 128, 64),
					Slots: 1 << 16, MaxCapacity: 64, Seed: 7, Backend: backend, Sets: sets})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { tg.Close(context.Background()) })
				var out []failure
				for k, pad := range Paddings {
					sys := NewSystem(tg, pad, 64)
					sys.Budget = budget
					rng := rand.New(rand.NewSource(int64(k + 1)))
					for i := range budget {
						res, err := sys.Check(context.Background(), sys.Draw(rng))
						if err != nil {
							t.Fatalf("%s, case %d: %v", pad, i, err)
						}
						if res.Failed() {
							out = append(out, failure{pad, i, res})
							break
						}
					}
				}
				return out, tg
			}
			exact, _ := run(0)
			ahead, tg := run(sets)
			answered, tainted := tg.AheadCounts()
			t.Logf("%d sets; checking ahead answered %d cases, %d windows tainted", tg.Sets, answered, tainted)
			if tg.Sets < 2 || answered == 0 {
				t.Fatalf("checking ahead answered %d cases on %d sets: it did not run", answered, tg.Sets)
			}
			if variant == "" && (len(ahead) > 0 || tainted > 0) {
				t.Fatalf("correct kernel: %d failures checked ahead, %d windows tainted; want none", len(ahead), tainted)
			}
			if variant != "" && len(exact) == 0 {
				t.Fatalf("mutant %s passed %d cases a padding, checked exactly: the test needs it to fail", variant, budget)
			}
			if len(ahead) != len(exact) {
				t.Fatalf("%d paddings failed checked ahead, %d checked exactly", len(ahead), len(exact))
			}
			for i := range exact {
				a, e := ahead[i], exact[i]
				if a.padding != e.padding || a.at != e.at {
					t.Errorf("checked ahead: %s fails at case %d (%s); exactly: %s at case %d (%s)",
						a.padding, a.at, a.res.Primary(), e.padding, e.at, e.res.Primary())
					continue
				}
				if av, ev := a.res.Violations, e.res.Violations; !same(av, ev) {
					t.Errorf("%s case %d: the violations differ:\nahead:   %s\nexactly: %s", a.padding, a.at, listed(av), listed(ev))
				}
			}
		})
	}
}

// listed is vs with their fields, one a line.
func listed(vs []oracle.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %+v", v)
	}
	return b.String()
}

// samePlaces reports whether two lists of violations name the same kinds
// at the same fields and slots, determinism left out.
func samePlaces(a, b []oracle.Violation) bool { return slices.Equal(places(a), places(b)) }

// place is a violation without its bytes.
type place struct {
	kind    oracle.Kind
	field   string
	slot    int64
	hasSlot bool
}

// places lists vs's places, sorted and without repeats.
func places(vs []oracle.Violation) []place {
	var ps []place
	for _, v := range vs {
		if v.Kind != oracle.Determinism {
			ps = append(ps, place{v.Kind, v.Field, v.Slot, v.HasSlot})
		}
	}
	slices.SortFunc(ps, func(x, y place) int {
		return cmp.Or(cmp.Compare(x.kind, y.kind), cmp.Compare(x.field, y.field), cmp.Compare(x.slot, y.slot),
			cmp.Compare(b2i(x.hasSlot), b2i(y.hasSlot)))
	})
	return slices.Compact(ps)
}

// TestSamePlaces: the device comparison forgives what a race decides
// (which row's bytes, split where, and a determinism violation) and
// nothing else.
func TestSamePlaces(t *testing.T) {
	pad := func(row, off, n int) oracle.Violation {
		return oracle.Violation{Kind: oracle.Padding, Field: "value", Slot: 0, HasSlot: true, Row: row, Off: off, Len: n}
	}
	diff := oracle.Violation{Kind: oracle.Differential, Off: 4096, Len: 32}
	det := oracle.Violation{Kind: oracle.Determinism, Off: 4096, Len: 32}
	other := pad(32, 0, 256)
	other.Slot = 1
	for _, tc := range []struct {
		name string
		a, b []oracle.Violation
		want bool
	}{
		{"another row won, split elsewhere", []oracle.Violation{pad(41, 128, 128), pad(32, 0, 128), diff}, []oracle.Violation{pad(32, 0, 256), diff}, true},
		{"determinism in one run only", []oracle.Violation{pad(32, 0, 256), det, diff}, []oracle.Violation{pad(32, 0, 256), diff}, true},
		{"another slot", []oracle.Violation{other, diff}, []oracle.Violation{pad(32, 0, 256), diff}, false},
		{"a kind missing", []oracle.Violation{pad(32, 0, 256)}, []oracle.Violation{pad(32, 0, 256), diff}, false},
		{"only determinism", []oracle.Violation{det}, nil, true},
	} {
		if got := samePlaces(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: samePlaces = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFarOnCUDA: a pool past 4 GiB of offsets lives on the GPU as a
// sparse reservation whose live windows alone are backed (reach.go,
// cudaarena.NewSparse): the correct kernel passes cases that name slots
// past 2^31 and 2^32 bytes, at every head dim a run draws, eagerly and in
// graphs; the offset-int32 mutant, whose offsets wrap there, fails; and
// the arena's backed bytes are a sliver of its reservation.
func TestFarOnCUDA(t *testing.T) {
	backend := arena.CUDA{Dev: cudatest.Device(t)}
	for _, tc := range []struct {
		variant  string
		d, p     int
		graph    bool
		wantFail bool
	}{
		{"", 8, 1, false, false}, {"", 120, 16, true, false}, {"", 576, 64, false, false},
		{"offset-int32", 128, 64, false, true},
	} {
		name := fmt.Sprintf("variant=%s/D=%d/P=%d/graph=%v", cmp.Or(tc.variant, "correct"), tc.d, tc.p, tc.graph)
		t.Run(name, func(t *testing.T) {
			p, dir := plugintest.Start(t, "fusedstore")
			l := kindtest.Layout(t, "bf16", tc.d, tc.p)
			tg, err := Open(context.Background(), p, dir, Config{Variant: tc.variant, Layout: l, Slots: FarSlots(l), MaxCapacity: 64,
				Seed: 7, Backend: backend, Sets: AutoSets, Graph: tc.graph})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tg.Close(context.Background()) })
			if tg.live == nil || tg.Layout.PoolBytes(tg.Slots) <= 1<<32 {
				t.Fatalf("pool of %d slots (%d bytes) not checked in windows", tg.Slots, tg.Layout.PoolBytes(tg.Slots))
			}
			far := 0
			failed := false
			for k, pad := range Paddings {
				sys := NewSystem(tg, pad, 64)
				sys.Budget = 200
				rng := rand.New(rand.NewSource(int64(k + 1)))
				for i := range sys.Budget {
					c := sys.Draw(rng)
					for _, s := range c.Loc[:c.Valid] {
						if l.Footprint(s)[0].Off >= 1<<31 {
							far++
						}
					}
					res, err := property.CheckOnce(context.Background(), sys, c) // a crash is the case's failure
					if err != nil {
						t.Fatalf("%s case %d: %v", pad, i, err)
					}
					if res.Failed() {
						if !tc.wantFail {
							t.Fatalf("%s case %d failed: %s", pad, i, listed(res.Violations))
						}
						failed = true
						break
					}
				}
			}
			if far == 0 {
				t.Errorf("no case named a slot past 2 GiB of offsets")
			}
			if tc.wantFail != failed {
				t.Errorf("failed %v, want %v", failed, tc.wantFail)
			}
		})
	}
}

// TestShapesOnCUDA: the bundled CUDA stores are exact at the shapes a run
// draws (head dims that are not multiples of 16, page size 1, the engines'
// largest), eagerly and in graphs, and each GPU-class mutant of the value
// classes and shapes dies where its CPU twin does.
func TestShapesOnCUDA(t *testing.T) {
	backend := arena.CUDA{Dev: cudatest.Device(t)}
	type subject struct {
		plugin, variant, layout string
		d, p                    int
		graph, wantFail         bool
	}
	var subjects []subject
	for _, sh := range [][2]int{{8, 1}, {24, 16}, {120, 64}, {136, 1}, {576, 256}} {
		for _, l := range []string{"bf16", "fp8-paged", "fp8-rows"} {
			subjects = append(subjects, subject{"fusedstore", "", l, sh[0], sh[1], sh[0] == 120, false})
			if l != "bf16" {
				subjects = append(subjects, subject{"fp8store", "", l, sh[0], sh[1], false, false})
			}
		}
	}
	subjects = append(subjects,
		subject{"fusedstore", "vec16-no-tail", "bf16", 120, 16, false, true},
		subject{"fusedstore", "denormals-are-zero", "bf16", 128, 64, false, true},
		subject{"fusedstore", "page-size-64", "fp8-paged", 128, 16, false, true},
		subject{"fusedstore", "zero-row-sign", "fp8-paged", 128, 64, false, true},
		subject{"fusedstore", "nan-pair-scale", "fp8-paged", 128, 64, true, true},
	)
	for _, s := range subjects {
		name := fmt.Sprintf("%s/%s/%s/D=%d/P=%d/graph=%v", s.plugin, cmp.Or(s.variant, "correct"), s.layout, s.d, s.p, s.graph)
		t.Run(name, func(t *testing.T) {
			p, dir := plugintest.Start(t, s.plugin)
			tg, err := Open(context.Background(), p, dir, Config{Variant: s.variant, Layout: kindtest.Layout(t, s.layout, s.d, s.p),
				Slots: 1 << 17, MaxCapacity: 64, Seed: 7, Backend: backend, Sets: AutoSets, Graph: s.graph})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tg.Close(context.Background()) })
			failed := ""
			for k, pad := range Paddings {
				sys := NewSystem(tg, pad, 64)
				sys.Budget = 60
				rng := rand.New(rand.NewSource(int64(k + 1)))
				for i := range sys.Budget {
					res, err := property.CheckOnce(context.Background(), sys, sys.Draw(rng))
					if err != nil {
						t.Fatalf("%s case %d: %v", pad, i, err)
					}
					if res.Failed() {
						failed = fmt.Sprintf("%s case %d: %s", pad, i, listed(res.Violations))
						break
					}
				}
				if failed != "" {
					break
				}
			}
			switch {
			case s.wantFail && failed == "":
				t.Errorf("the mutant passed 60 cases a padding")
			case !s.wantFail && failed != "":
				t.Errorf("the correct kernel failed: %s", failed)
			}
		})
	}
}

package load

import (
	"context"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/plugin"
)

// missingGate is the incident's minimal case: one layer, index-K only, its
// one page late, read by the indexer before anything else.
func missingGate() *Case {
	return &Case{Geometry: testGeometry(), Op: OpLoad, Layers: 1, Buffers: []string{BufferIndexK}, Order: []string{BufferIndexK},
		Pages: []Page{{0, 0}}, Late: []Item{{0, BufferIndexK, 0}}}
}

func checkOne(t testing.TB, p *plugin.Plugin, variant string, backend arena.Backend, c *Case) *Result {
	t.Helper()
	sys := NewSystem(p, plugintest.Dir(t), Config{Variant: variant, Seed: 1, Backend: backend, Geometry: c.Geometry}, nil)
	defer sys.Close(context.Background())
	r, err := sys.Check(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestHappensBeforeSeesWhatTimingHid: with the latch off, the missing
// index-K gate's probe happens to see the loaded bytes (on the CPU the
// copy runs as soon as it is queued, before the probe), so the bytes
// show nothing; the happens-before checker flags the read anyway, naming
// the probe, the copy and the missing edge. With the latch on, the bytes
// show it too; the correct plugin is flagged by neither, either way.
func TestHappensBeforeSeesWhatTimingHid(t *testing.T) {
	off := missingGate()
	off.NoLatch = true
	r := checkOne(t, inProcess(), "indexk-gate-missing", arena.SHM{}, off)
	if r.Has(ReadEarly) || !r.Has(Race) {
		t.Fatalf("latch off: %v; want no stale read, and a happens-before violation", r.Violations)
	}
	v := r.Violations[0]
	if !strings.Contains(v.Detail, "read after write") || !strings.Contains(v.Detail, "probe L0/indexk page 0 (consumer") ||
		!strings.HasPrefix(v.Edge, "load #") || v.Item == nil || *v.Item != (Item{0, BufferIndexK, 0}) {
		t.Errorf("the race reads %v", v)
	}
	if r.Held != 0 {
		t.Errorf("%d operations held with the latch off", r.Held)
	}
	if r := checkOne(t, inProcess(), "indexk-gate-missing", arena.SHM{}, missingGate()); !r.Has(ReadEarly) || !r.Has(Race) {
		t.Errorf("latch on: %v; want the stale read and the race", r.Violations)
	}
	for _, c := range []*Case{off, missingGate()} {
		if r := checkOne(t, inProcess(), "", arena.SHM{}, c); r.Failed() {
			t.Errorf("the correct plugin on %v: %v", c, r.Violations)
		}
	}
}

// TestLatchOffRandomCases: over random cases with the latch off, the
// mutants whose probes read early are still caught by the checker alone,
// every case the byte oracle passes; the correct plugin never is.
func TestLatchOffRandomCases(t *testing.T) {
	for _, variant := range []string{"", "indexk-gate-missing", "gate-previous-layer", "record-before-copies"} {
		g := &Gen{Geometry: testGeometry(), Profile: ProfileLoad}
		sys := NewSystem(inProcess(), plugintest.Dir(t), Config{Backend: arena.SHM{}, Variant: variant, Seed: 1, Geometry: g.Geometry}, g)
		hidden, flagged, n := 0, 0, 200
		if testing.Short() {
			n = 50
		}
		for i := range n {
			c := g.Draw(randFor(int64(i)))
			c.NoLatch = true
			r, err := sys.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if variant == "" && r.Failed() {
				t.Fatalf("the correct plugin, latch off, on %v: %v", c, r.Violations)
			}
			if !r.Has(ReadEarly) && r.Has(Race) {
				hidden++
			}
			if r.Has(Race) {
				flagged++
			}
		}
		sys.Close(context.Background())
		t.Logf("%-22s latch off: %3d of %d cases flagged by the checker, %3d of them with every probe seeing the loaded bytes", variant, flagged, n, hidden)
		if variant != "" && hidden == 0 {
			t.Errorf("%s: no case where timing hid the bug and the checker found it", variant)
		}
	}
}

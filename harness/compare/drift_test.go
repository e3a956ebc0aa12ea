package compare

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/perf/benchmath"
)

// floorFile writes ten lines per benchmark: a store of storeNs and its
// floors, an empty graph launch of emptyNs and an eager copy of copyNs,
// each with 0.5% noise.
func floorFile(tokens int, storeNs, emptyNs, copyNs float64, seed uint64) []byte {
	return floorFileTimed("batched", 0.005, tokens, storeNs, emptyNs, copyNs, seed)
}

// floorFileTimed is floorFile for a timing, with the store's noise.
func floorFileTimed(timing string, noise float64, tokens int, storeNs, emptyNs, copyNs float64, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	keys := "plugin=p/layout=bf16/tokens=%d/mode=%s/cache=hot/timing=" + timing
	for _, r := range []struct {
		kind, mode string
		tokens     int
		ns         float64
	}{{"Store", "graph", tokens, storeNs}, {"Empty", "graph", 1, emptyNs}, {"Copy", "eager", tokens, copyNs}} {
		name := fmt.Sprintf("Benchmark%s/"+keys, r.kind, r.tokens, r.mode)
		sd := 0.005
		if r.kind == "Store" {
			sd = noise
		}
		for range 10 {
			fmt.Fprintf(&b, "%s 1 %.1f ns/op\n", name, r.ns*(1+sd*rng.NormFloat64()))
		}
	}
	return b.Bytes()
}

func storeRow(t *testing.T, base, next []byte, o Options, tokens int) Cell {
	return storeRowTimed(t, base, next, o, "batched", tokens)
}

func storeRowTimed(t *testing.T, base, next []byte, o Options, timing string, tokens int) Cell {
	t.Helper()
	r, err := Compare("base.txt", bytes.NewReader(base), "new.txt", bytes.NewReader(next), o)
	if err != nil {
		t.Fatal(err)
	}
	return cellFor(t, r, fmt.Sprintf("Store/plugin=p/layout=bf16/tokens=%d/mode=graph/cache=hot/timing=%s", tokens, timing))
}

// TestNetOfFloorDrift: a rerun on a machine whose launches got 12% slower
// moves a launch-bound kernel with them, which is no regression; the same
// kernel slowed by 30% on the same machine is one. A large kernel is
// judged against the copy, and floors are never judged.
func TestNetOfFloorDrift(t *testing.T) {
	base := floorFile(1, 1775, 1429, 1790, 1)
	drifted := floorFile(1, 1775*1.14, 1429*1.12, 1790*0.91, 2)
	row := storeRow(t, base, drifted, Options{}, 1)
	if row.Verdict != Same || row.Ref == "" || row.Ref[:6] != "Empty/" {
		t.Errorf("kernel drifting with its launch floor: %s against %q (net %+.1f%%); want unchanged against the empty launch", row.Verdict, row.Ref, row.NetDeltaPct)
	}
	if abs := storeRow(t, base, drifted, Options{Absolute: true}, 1); abs.Verdict != Slower {
		t.Errorf("--absolute: %s; want the raw +14%% judged slower", abs.Verdict)
	}
	slowed := floorFile(1, 1775*1.3, 1429, 1790, 3)
	if row := storeRow(t, base, slowed, Options{}, 1); row.Verdict != Slower {
		t.Errorf("kernel slowed 30%% on a steady machine: %s (net %+.1f%%); want slower", row.Verdict, row.NetDeltaPct)
	}
	big := floorFile(262144, 46000, 1429, 34800, 4)
	bigDrift := floorFile(262144, 46000*1.08, 1429, 34800*1.08, 5)
	row = storeRow(t, big, bigDrift, Options{}, 262144)
	if row.Verdict != Same || row.Ref[:5] != "Copy/" {
		t.Errorf("large kernel drifting with the copy: %s against %q; want unchanged against the copy", row.Verdict, row.Ref)
	}
	r, err := Compare("base.txt", bytes.NewReader(base), "new.txt", bytes.NewReader(slowed), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Cells {
		if isFloor(c.Name) && c.Verdict != Reference {
			t.Errorf("floor %s judged %s; want reference", c.Name, c.Verdict)
		}
	}
}

// TestLatencyRows: per-launch rows take the latency threshold, and a
// change inside the base's own spread is not called one.
func TestLatencyRows(t *testing.T) {
	base := floorFileTimed("per-launch", 0.01, 512, 4000, 4800, 5000, 1)
	worse := floorFileTimed("per-launch", 0.01, 512, 4000*1.3, 4800, 5000, 2)
	if row := storeRowTimed(t, base, worse, Options{}, "per-launch", 512); row.Verdict != Same {
		t.Errorf("per-launch +30%%: %s; want unchanged under the 50%% latency threshold", row.Verdict)
	}
	if row := storeRowTimed(t, base, worse, Options{LatencyThreshold: 0.1}, "per-launch", 512); row.Verdict != Slower {
		t.Errorf("per-launch +30%% with a 10%% latency threshold: %s; want slower", row.Verdict)
	}
	noisy := floorFileTimed("per-launch", 0.6, 512, 4000, 4800, 5000, 3)
	doubled := floorFileTimed("per-launch", 0.6, 512, 8000, 4800, 5000, 4)
	if row := storeRowTimed(t, noisy, doubled, Options{LatencyThreshold: 0.1}, "per-launch", 512); row.Verdict != Same || apart(row.Old, row.New) {
		t.Errorf("a doubling inside a ±60%% spread: %s (intervals apart: %v); want unchanged", row.Verdict, apart(row.Old, row.New))
	}
	if apart(Side{Summary: summary(10, 8, 12)}, Side{Summary: summary(11, 9, 13)}) || !apart(Side{Summary: summary(10, 9, 11)}, Side{Summary: summary(13, 12, 14)}) {
		t.Error("apart: want overlapping intervals together, disjoint ones apart")
	}
}

func summary(center, lo, hi float64) benchmath.Summary {
	return benchmath.Summary{Center: center, Lo: lo, Hi: hi}
}

// TestNetOfFloorAnyKernel: a kernel of another kind than store (a load)
// is judged net of the copy measured beside it, as a store is: drifting
// with its copy is no change, and its floors are references.
func TestNetOfFloorAnyKernel(t *testing.T) {
	load := func(loadNs, copyNs float64, seed uint64) []byte {
		return bytes.ReplaceAll(floorFileTimed("per-launch", 0.005, 4096, loadNs, 1429, copyNs, seed), []byte("BenchmarkStore/"), []byte("BenchmarkLoad/"))
	}
	r, err := Compare("base.txt", bytes.NewReader(load(46000, 34800, 1)), "new.txt", bytes.NewReader(load(46000*1.08, 34800*1.08, 2)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := cellFor(t, r, "Load/plugin=p/layout=bf16/tokens=4096/mode=graph/cache=hot/timing=per-launch")
	if row.Verdict != Same || row.Ref == "" || row.Ref[:5] != "Copy/" {
		t.Errorf("a load drifting with its copy: %s against %q (net %+.1f%%); want unchanged against the copy", row.Verdict, row.Ref, row.NetDeltaPct)
	}
	if cp := cellFor(t, r, "Copy/plugin=p/layout=bf16/tokens=4096/mode=eager/cache=hot/timing=per-launch"); cp.Verdict != Reference {
		t.Errorf("the load's copy: %s; want a reference, not judged", cp.Verdict)
	}
}

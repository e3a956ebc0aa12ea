package transfer

import (
	"fmt"
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/plugins"
)

// FuzzTransfer checks decoded transfer cases against the plugin named by
// KVHARNESS_PLUGIN (default pdtransfer; see package fuzzing): descriptors,
// bytes, guards and room digests, each case twice. Run it with:
//
//	go test -run='^$' -fuzz='^FuzzTransfer$' -fuzztime=30s ./harness/kernels/transfer
//
// A plugin without a transfer kernel skips it.
func FuzzTransfer(f *testing.F) { fuzzing.Fuzz(f, FuzzTarget, plugins.Servers) }

// fuzzSeed is a minimal transfer case for one bug class, kept in the
// FuzzTransfer seed corpus. Kills names the pdtransfer variant it must
// kill ("" for an edge case every mutant may pass).
type fuzzSeed struct {
	Name  string
	Kills string
	Case  *Case
	Why   string
}

// seedBuffers picks base buffers by name, in base order.
func seedBuffers(names ...string) pd.Geometry {
	g := fuzzBase.Clone()
	g.Buffers = g.Buffers[:0]
	for _, b := range fuzzBase.Buffers {
		for _, n := range names {
			if b.Name == n {
				g.Buffers = append(g.Buffers, b)
			}
		}
	}
	return g
}

func seedRooms(pairs ...[2][]int64) []Room {
	out := make([]Room, len(pairs))
	for i, p := range pairs {
		out[i] = Room{ID: uint64(i), Src: p[0], Dst: p[1]}
	}
	return out
}

func seedPages(ps ...int64) []int64 { return ps }

// wrapPage is the logical page the index-K page table maps to physical
// page 0.
var wrapPage = int64(fuzzPages - fuzzBase.Buffers[2].Shift)

// fuzzSeeds is the FuzzTransfer seed corpus: a minimal case per
// pdtransfer mutant, and the edges runs are built around. pdtransfer passes
// every one.
var fuzzSeeds = []fuzzSeed{
	{"bf16-page", "fp8-item-len", &Case{Geometry: seedBuffers("L0.kv"), Rooms: seedRooms([2][]int64{seedPages(3), seedPages(5)})},
		"one bf16 page: sent with an fp8 item_len it is cut short and shifted"},
	{"indexk-page", "skip-buffer", &Case{Geometry: seedBuffers("L0.indexk"), Rooms: seedRooms([2][]int64{seedPages(0), seedPages(1)})},
		"the index-K buffer alone: a transfer that forgets it sends nothing"},
	{"shared-allocation", "base-addr-dedup", &Case{Geometry: seedBuffers("L0.kv", "L0.state"), Rooms: seedRooms([2][]int64{seedPages(2), seedPages(7)})},
		"two buffers carved from one allocation: merged by base address, the second is never sent"},
	{"two-page-tables", "legacy-page-map", &Case{Geometry: seedBuffers("L0.kv", "L0.indexk"), Rooms: seedRooms([2][]int64{seedPages(1), seedPages(4)})},
		"buffers on different page tables: the first buffer's pages are wrong for the second"},
	{"run-of-three", "last-run-truncated", &Case{Geometry: seedBuffers("L0.kv"), Rooms: seedRooms([2][]int64{seedPages(4, 5, 6), seedPages(8, 9, 10)})},
		"one run of three pages: its last page is the one cut off"},
	{"run-across-64", "run-crosses-64", &Case{Geometry: seedBuffers("L0.kv"), Rooms: seedRooms([2][]int64{seedPages(62, 63, 64, 65), seedPages(2, 3, 4, 5)})},
		"one run across page 64: split at the chunk boundary, its second half read from the run's start"},
	{"page-table-wrap", "", &Case{Geometry: seedBuffers("L0.indexk"), Rooms: seedRooms([2][]int64{seedPages(wrapPage-1, wrapPage), seedPages(2, 3)})},
		"a run contiguous in the room but wrapping in the buffer's page table: two descriptors"},
	{"first-and-last-page", "", &Case{Geometry: seedBuffers("L0.kv", "L1.indexk"), Rooms: seedRooms([2][]int64{seedPages(0, fuzzPages-1), seedPages(fuzzPages-1, 0)})},
		"page 0 and the last page, swapped: offsets at both ends of the pools"},
	{"broken-runs", "", &Case{Geometry: seedBuffers("L1.kv", "L1.state"), Rooms: seedRooms(
		[2][]int64{seedPages(3, 4, 5), seedPages(9, 10, 12)}, [2][]int64{seedPages(7, 9), seedPages(0, 1)})},
		"runs contiguous on one side only, two rooms: descriptors must split where either side breaks"},
}

// Entry implements kindtest.Seed.
func (s fuzzSeed) Entry() (name, kills string, input []byte) { return s.Name, s.Kills, s.Input() }

// Input encodes a seed as a fuzz input.
func (s fuzzSeed) Input() []byte {
	data, err := Encode(s.Case, fuzzBase, fuzzMaxRooms, fuzzMaxPages)
	if err != nil {
		panic(fmt.Sprintf("seed %s: %v", s.Name, err))
	}
	return data
}

// TestTransferSeedCorpus keeps testdata/fuzz/FuzzTransfer in step with
// fuzzSeeds; run with -update after changing a seed.
func TestTransferSeedCorpus(t *testing.T) {
	for _, s := range fuzzSeeds {
		golden.Check(t, fuzzing.CorpusFile("FuzzTransfer", s.Name), fuzzing.CorpusEntry(s.Input()))
		if c := Decode(s.Input(), fuzzBase, fuzzMaxRooms, fuzzMaxPages); c.String() != s.Case.String() || c.Geometry.Key() != s.Case.Geometry.Key() {
			t.Errorf("%s decodes to %v, want %v", s.Name, c, s.Case)
		}
	}
}

// TestTransferSeedsKillEveryMutant: pdtransfer passes every seed, and each
// variant is killed by the seed made for it (in process, for speed).
func TestTransferSeedsKillEveryMutant(t *testing.T) {
	kindtest.SeedsKillMutantsBut(t, FuzzTarget, "pdtransfer", fuzzSeeds, beyondCorpus)
}

// beyondCorpus are pdtransfer mutants the seed corpus cannot kill, and
// why; their own test is TestOffsetInt32KilledOnlyFar.
var beyondCorpus = map[string]string{
	"offset-int32": "needs page offsets past 2 GiB; the fuzzed pools hold a few dozen pages",
}

// TestFeaturesTellSeedsApart: the fuzz folder's lane is guided by the
// features of a case alone; every seed has its own.
func TestFeaturesTellSeedsApart(t *testing.T) { kindtest.FeaturesTellSeedsApart(t, FuzzTarget) }

package pdasync

import (
	"testing"

	"github.com/kvharness/kvharness/harness/fuzzing"
	"github.com/kvharness/kvharness/harness/internal/golden"
	"github.com/kvharness/kvharness/harness/internal/kindtest"
	"github.com/kvharness/kvharness/plugins"
	"github.com/kvharness/kvharness/plugins/pdasync/kernel"
)

// FuzzPDAsync plays decoded cases (rooms, plans, page tables, schedules)
// on the two processes of the plugin named by KVHARNESS_PLUGIN (default
// pdasync; see package fuzzing) and judges every answer. Run it with:
//
//	go test -run='^$' -fuzz='^FuzzPDAsync$' -fuzztime=30s ./harness/kernels/pdasync
//
// A plugin without a pdasync kernel skips it.
func FuzzPDAsync(f *testing.F) { fuzzing.Fuzz(f, FuzzTarget, plugins.Servers) }

// seedRoom is a room in Decode's terms: picks into the free pages of each
// side, the number of components and their rotation over the buffers, and
// each component's handle sizes.
type seedRoom struct {
	src, virt []byte
	comps     int
	rot       byte
	handles   [][]int
}

// seedSpec is a case in Decode's terms.
type seedSpec struct {
	rooms     []seedRoom
	swaps     [][2]byte // page table swaps; none: the identity
	successor *seedRoom // after room 0, reusing its first pages
	steps     [][]byte  // an op byte and its operands each
}

// bytes encodes the spec as Decode reads it.
func (s seedSpec) bytes() []byte {
	out := []byte{byte(len(s.rooms) - 1)}
	if len(s.swaps) == 0 {
		out = append(out, 0)
	} else {
		out = append(out, byte(8*3+len(s.swaps))) // ≠ 0 mod 3, ≡ len mod 8
		for _, w := range s.swaps {
			out = append(out, w[0], w[1])
		}
	}
	for _, r := range s.rooms {
		out = append(out, byte(len(r.src)-1))
		for i := range r.src {
			out = append(out, r.src[i], r.virt[i])
		}
		out = append(out, r.plan()...)
	}
	if s.successor == nil {
		out = append(out, 1)
	} else {
		r := s.successor
		out = append(out, 0, 0, byte(len(r.src)-1))
		out = append(out, r.src...)
		out = append(out, r.plan()...)
	}
	out = append(out, byte(len(s.steps)))
	for _, st := range s.steps {
		out = append(out, st...)
	}
	return out
}

func (r seedRoom) plan() []byte {
	out := []byte{byte(r.comps - 1), r.rot}
	for _, hs := range r.handles {
		out = append(out, byte(len(hs)-1))
		for _, n := range hs[:len(hs)-1] {
			out = append(out, byte(n-1))
		}
	}
	return out
}

// Step bytes, as Decode reads them.
func sRelease(h byte) []byte { return []byte{0, h} }
func sFail(h byte) []byte    { return []byte{1, h} }
func sPoll() []byte          { return []byte{2} }
func sDeliver(r, c byte, what byte) []byte {
	return []byte{3, r, c, what} // what: 0 all, 1 handles, 2 component
}
func sAbort(r byte) []byte { return []byte{5, r} }

// fuzzSeed is a minimal case for one bug class, kept in the FuzzPDAsync
// seed corpus. Kills names the variant it must kill ("" for an edge every
// mutant may pass).
type fuzzSeed struct {
	Name, Kills string
	Spec        seedSpec
	Why         string
}

// Entry implements kindtest.Seed.
func (s fuzzSeed) Entry() (name, kills string, input []byte) { return s.Name, s.Kills, s.Spec.bytes() }

var oneRoom = seedRoom{src: []byte{3}, virt: []byte{4}, comps: 1, handles: [][]int{{1}}}

var fuzzSeeds = []fuzzSeed{
	{"abort-held", kernel.AbortFreesInFlight, seedSpec{rooms: []seedRoom{oneRoom}, steps: [][]byte{sAbort(0)}},
		"a room aborted with its only handle behind its gate: its pages must wait for the handle"},
	{"two-components", kernel.FirstComponentDone, seedSpec{rooms: []seedRoom{{src: []byte{1}, virt: []byte{2}, comps: 2, handles: [][]int{{1}, {1}}}},
		steps: [][]byte{sRelease(0), sDeliver(0, 0, 0)}},
		"one of two components opened and delivered: the room is not complete"},
	{"fail-one-of-two", kernel.FirstFailureFrees, seedSpec{rooms: []seedRoom{{src: []byte{0, 0}, virt: []byte{5, 5}, comps: 1, handles: [][]int{{1, 1}}}},
		steps: [][]byte{sFail(1), sDeliver(0, 0, 0)}},
		"the second of two handles failed and delivered while the first is held: the pages must wait for it"},
	{"compacted", kernel.VirtualAsPhysical, seedSpec{rooms: []seedRoom{{src: []byte{2}, virt: []byte{0}, comps: 1, handles: [][]int{{1}}}},
		swaps: [][2]byte{{0, 7}}},
		"virtual page 0 lives in physical page 7 after compaction"},
	{"poll-held", kernel.PollAsCompletion, seedSpec{rooms: []seedRoom{oneRoom}, steps: [][]byte{sPoll()}},
		"a poll while every gate is held: nothing can be done"},
	{"failed-handle", kernel.FailureUnreported, seedSpec{rooms: []seedRoom{oneRoom}, steps: [][]byte{sFail(0), sDeliver(0, 0, 0)}},
		"a room's only handle failed and delivered: the engine must report the failure, not wait on it"},
	{"successor", "", seedSpec{rooms: []seedRoom{{src: []byte{0, 0}, virt: []byte{3, 3}, comps: 3, handles: [][]int{{2}, {1, 1}, {2}}}},
		successor: &seedRoom{src: []byte{6}, comps: 1, handles: [][]int{{1}}},
		steps:     [][]byte{sRelease(1), sRelease(0), sDeliver(0, 1, 2), sDeliver(0, 1, 1), sRelease(2), sRelease(3), sDeliver(0, 0, 0), sDeliver(0, 2, 0)}},
		"a room read component by component, delivered out of order, then its pages reused by the next room"},
	{"abort-after-release", "", seedSpec{rooms: []seedRoom{oneRoom, {src: []byte{4}, virt: []byte{4}, comps: 1, handles: [][]int{{1}}}},
		steps: [][]byte{sRelease(0), sAbort(0), sRelease(1), sDeliver(0, 0, 0), sDeliver(1, 0, 0)}},
		"a room aborted after its copies ran, beside one that completes"},
}

// TestSeedCorpus keeps testdata/fuzz/FuzzPDAsync in step with fuzzSeeds;
// run with -update after changing a seed.
func TestSeedCorpus(t *testing.T) {
	for _, s := range fuzzSeeds {
		golden.Check(t, fuzzing.CorpusFile("FuzzPDAsync", s.Name), fuzzing.CorpusEntry(s.Spec.bytes()))
	}
}

// TestSeedsKillEveryMutant: the correct plugin passes every seed, and each
// variant is killed by the seed made for it (in process, for speed).
func TestSeedsKillEveryMutant(t *testing.T) {
	kindtest.SeedsKillMutantsBut(t, FuzzTarget, "pdasync", fuzzSeeds, beyondCorpus)
}

// beyondCorpus are pdasync mutants the seed corpus cannot kill, and why;
// their own test is TestOffsetInt32KilledOnlyFar.
var beyondCorpus = map[string]string{
	kernel.OffsetInt32: "needs page offsets past 2 GiB; the fuzzed pools hold a few dozen pages",
}

// TestFeaturesTellSeedsApart: the fuzz folder's lane is guided by the
// features of a case alone; every seed has its own.
func TestFeaturesTellSeedsApart(t *testing.T) { kindtest.FeaturesTellSeedsApart(t, FuzzTarget) }

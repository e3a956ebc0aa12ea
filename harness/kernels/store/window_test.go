package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/rundir"
)

// TestCaptureAllSplitsByRun: one scan of several runs' footprints gives
// each run exactly what a scan of its own windows finds, whether the runs'
// windows interleave and touch (their bytes copied out of the scan's) or
// each run has a stretch of the arena of its own (its bytes a stretch of
// the scan's).
func TestCaptureAllSplitsByRun(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own-stretch=%v", own), func(t *testing.T) { testCaptureAll(t, own) })
	}
}

func testCaptureAll(t *testing.T, own bool) {
	const size = 1 << 16
	m, err := shm.New(&rundir.Dir{Path: t.TempDir()}, size)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Fill(pool.Window{Off: 0, Len: size}, 9); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 2))
	for range 200 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if err := m.WriteAt(b, rng.IntN(size-40)); err != nil {
			t.Fatal(err)
		}
	}
	regions := []pool.Region{{Pool: pool.Window{Off: 0}}, {Pool: pool.Window{Off: 1000}}, {Pool: pool.Window{Off: 5}}}
	if own { // each run's pool its stretch of the arena, as in a flight
		for k := range regions {
			regions[k].Pool = pool.Window{Off: k * size / len(regions), Len: size / len(regions)}
		}
	}
	ws := make([][]pool.Window, len(regions))
	for at := 0; at+64 < size; {
		k := rng.IntN(len(regions))
		if own {
			k = at * len(regions) / size
		}
		l := 1 + rng.IntN(64)
		ws[k] = append(ws[k], pool.Window{Off: at, Len: l})
		at += l + rng.IntN(3) // windows of different runs touch now and then
	}
	for k := range ws {
		ws[k] = mergeWindows(ws[k])
	}
	deltas, _, err := captureAll(m, regions, ws)
	if err != nil {
		t.Fatal(err)
	}
	for k := range ws {
		want, b, err := m.ChangedIn(ws[k])
		if err != nil {
			t.Fatal(err)
		}
		got := make([]pool.Window, len(deltas[k].Windows))
		for i, w := range deltas[k].Windows {
			got[i] = pool.Window{Off: w.Off + regions[k].Pool.Off, Len: w.Len}
		}
		if len(want) == 0 {
			want = []pool.Window{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: captureAll found %v; a scan of its own windows %v", k, got, want)
		}
		if !bytes.Equal(deltas[k].Bytes, b) {
			t.Fatalf("run %d: captureAll's bytes differ from its own scan's", k)
		}
		if len(want) == 0 {
			t.Fatalf("run %d changed nothing: the test means every run to see changes", k)
		}
	}
}

// fixedScanner answers every window scan with the same changed ranges.
type fixedScanner struct {
	ranges []pool.Window
	bytes  []byte
}

func (f fixedScanner) ChangedIn([]pool.Window) ([]pool.Window, []byte, error) {
	return f.ranges, f.bytes, nil
}

// BenchmarkCaptureAllSplit is the store's part of a flight's capture: one
// scan's changed ranges (every row of four cases of three runs of 256
// rows of two 256-byte planes) split back into each run's delta.
func BenchmarkCaptureAllSplit(b *testing.B) {
	const runs, rows, poolBytes = 12, 512, 1 << 29
	regions := make([]pool.Region, runs)
	ws := make([][]pool.Window, runs)
	var f fixedScanner
	for k := range runs {
		regions[k].Pool = pool.Window{Off: k * poolBytes, Len: poolBytes}
		for r := range rows {
			w := pool.Window{Off: k*poolBytes + r*(poolBytes/rows), Len: 256}
			ws[k] = append(ws[k], w)
			f.ranges = append(f.ranges, w)
		}
	}
	f.bytes = make([]byte, runs*rows*256)
	for b.Loop() {
		deltas, _, err := captureAll(f, regions, ws)
		if err != nil || len(deltas[runs-1].Windows) != rows {
			b.Fatalf("%v, %d windows in the last run; want %d", err, len(deltas[runs-1].Windows), rows)
		}
	}
}

// TestMergeWindowsAgreesWithBytes: mergeWindows (by comparison below
// radixMin windows, by radix above, on offsets past 4 GiB too) covers
// exactly the bytes its windows cover, as sorted windows that neither
// overlap nor touch; duplicates (padded rows at one sink slot) and
// windows of one offset and several lengths included.
func TestMergeWindowsAgreesWithBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	for _, n := range []int{0, 1, 7, radixMin - 1, radixMin, 3 * radixMin} {
		for k, far := range []int{0, 5 << 30, 3 << 20} {
			spread := []int{1 << 16, 1 << 16, 1 << 25}[k] // two radix passes, or three
			var ws []pool.Window
			for range n {
				w := pool.Window{Off: far + rng.IntN(spread), Len: 1 + rng.IntN(24)}
				ws = append(ws, w)
				if rng.IntN(8) == 0 {
					ws = append(ws, w, pool.Window{Off: w.Off, Len: 1 + rng.IntN(40)})
				}
			}
			want := map[int]bool{}
			for _, w := range ws {
				for b := w.Off; b < w.End(); b++ {
					want[b] = true
				}
			}
			got := mergeWindows(ws)
			covered := 0
			for i, w := range got {
				if w.Len <= 0 || i > 0 && w.Off <= got[i-1].End() {
					t.Fatalf("n=%d far=%d: window %d %v after %v: want sorted windows apart", n, far, i, w, got[max(i-1, 0)])
				}
				for b := w.Off; b < w.End(); b++ {
					if !want[b] {
						t.Fatalf("n=%d far=%d: byte %d merged in but in no window", n, far, b)
					}
				}
				covered += w.Len
			}
			if covered != len(want) {
				t.Fatalf("n=%d far=%d: merged windows cover %d bytes, the windows %d", n, far, covered, len(want))
			}
		}
	}
}

// TestJoinWindows: joining covers every byte of the windows it was
// given, leaves no gap of at most the limit between its windows, and
// adds only the bytes of such gaps.
func TestJoinWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for range 100 {
		var ws []pool.Window
		for at := rng.IntN(100); len(ws) < 1+rng.IntN(60); {
			l := 1 + rng.IntN(40)
			ws = append(ws, pool.Window{Off: at, Len: l})
			at += l + 1 + rng.IntN(3*joinGap)
		}
		in := append([]pool.Window(nil), ws...)
		got := joinWindows(ws)
		want := 0
		for i, w := range in {
			want += w.Len
			if i > 0 && w.Off-in[i-1].End() <= joinGap {
				want += w.Off - in[i-1].End()
			}
		}
		if pool.Total(got) != want {
			t.Fatalf("joined %v into %v: %d bytes, want %d", in, got, pool.Total(got), want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Off-got[i-1].End() <= joinGap {
				t.Fatalf("joined %v into %v: windows %d and %d are %d bytes apart", in, got, i-1, i, got[i].Off-got[i-1].End())
			}
		}
		for _, w := range in {
			if !slices.ContainsFunc(got, func(g pool.Window) bool { return g.Off <= w.Off && w.End() <= g.End() }) {
				t.Fatalf("joined %v into %v: %v not covered", in, got, w)
			}
		}
	}
}

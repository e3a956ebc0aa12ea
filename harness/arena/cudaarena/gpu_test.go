package cudaarena

import (
	"bytes"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena/shm"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/cuda/cudatest"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/rundir"
)

// openDevice opens GPU 0, or skips the test on a machine without CUDA.
func openDevice(t testing.TB) *cuda.Device { return cudatest.Device(t) }

// pair is the same arena in both backends; every operation runs on both and
// must give the same answer.
type pair struct {
	t    *testing.T
	host *shm.Memory
	gpu  *Memory
}

func newPair(t *testing.T, size int) *pair {
	dev := openDevice(t)
	host, err := shm.New(&rundir.Dir{Path: t.TempDir()}, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	start := time.Now()
	gpu, err := New(dev, size, FD, t.TempDir()) // the pair's tests run on VMM memory; TestDesc covers IPC
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("New(%d bytes), kernels compiled or taken from the cache: %v", size, time.Since(start))
	t.Cleanup(func() {
		if err := gpu.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &pair{t, host, gpu}
}

func (p *pair) both(what string, f func(m memory) error) {
	p.t.Helper()
	e1, e2 := f(p.host), f(p.gpu)
	if (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
		p.t.Fatalf("%s: shm error %v, cuda error %v", what, e1, e2)
	}
}

func (p *pair) write(off int, b []byte) {
	p.both("WriteAt", func(m memory) error { return m.WriteAt(b, off) })
}

func (p *pair) fill(w pool.Window, seed uint64) {
	p.both("Fill", func(m memory) error { return m.Fill(w, seed) })
}

// changed compares Changed on both backends and returns the answer.
func (p *pair) changed(w pool.Window) []pool.Window {
	p.t.Helper()
	want, err := p.host.Changed(w)
	if err != nil {
		p.t.Fatal(err)
	}
	got, err := p.gpu.Changed(w)
	if err != nil {
		p.t.Fatalf("cuda Changed(%+v): %v", w, err)
	}
	if !reflect.DeepEqual(got, want) {
		p.t.Fatalf("Changed(%+v):\ncuda %v\nshm  %v", w, got, want)
	}
	ws, b, err := p.gpu.ChangedBytes(w)
	if err != nil || !reflect.DeepEqual(ws, want) {
		p.t.Fatalf("cuda ChangedBytes(%+v) ranges %v (%v); want %v", w, ws, err, want)
	}
	off := 0
	for _, r := range ws {
		if !bytes.Equal(b[off:off+r.Len], p.host.Bytes()[r.Off:r.End()]) {
			p.t.Fatalf("ChangedBytes(%+v): bytes of %+v differ from the arena's", w, r)
		}
		off += r.Len
	}
	if off != len(b) {
		p.t.Fatalf("ChangedBytes(%+v): %d bytes for ranges of %d", w, len(b), off)
	}
	return got
}

// sameBytes compares the whole arena.
func (p *pair) sameBytes() {
	p.t.Helper()
	size := len(p.host.Bytes())
	got := make([]byte, size)
	if err := p.gpu.ReadAt(got, 0); err != nil {
		p.t.Fatal(err)
	}
	if i := firstDiff(got, p.host.Bytes()); i >= 0 {
		p.t.Fatalf("arenas differ first at byte %d: cuda %#x, shm %#x", i, got[i], p.host.Bytes()[i])
	}
}

// noBlocksFlagged checks the device scan itself, not just Changed's answer:
// on an unchanged arena it must flag no block, or the host would fetch and
// recheck blocks for nothing.
func (p *pair) noBlocksFlagged(w pool.Window) {
	p.t.Helper()
	var n int
	err := p.gpu.dev.Do(func(c *cuda.Ctx) error {
		p.gpu.mu.Lock()
		defer p.gpu.mu.Unlock()
		var err error
		n, err = p.gpu.scan(c, p.gpu.bl.Pieces(w))
		return err
	})
	if err != nil || n != 0 {
		p.t.Fatalf("scan of an unchanged arena flagged %d blocks (%v)", n, err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func TestMatchesSHM(t *testing.T) {
	const size = 1<<20 + 100 // not a multiple of 8 or 256
	p := newPair(t, size)
	whole := pool.Window{Off: 0, Len: size}
	if c := p.changed(whole); c != nil {
		t.Fatalf("fresh arena changed: %v", c)
	}

	p.fill(pool.Window{Off: 0, Len: 4096}, 1)
	p.fill(pool.Window{Off: 4099, Len: 50001}, 2) // unaligned both ends
	p.fill(pool.Window{Off: 300000, Len: size - 300000}, 3)
	p.fill(pool.Window{Off: 1000, Len: 3097}, 4) // overlaps the first; leaves [4097,4099) unfilled
	p.sameBytes()
	if c := p.changed(whole); c != nil {
		t.Fatalf("filled arena changed: %v", c)
	}

	p.fill(pool.Window{Off: 10003, Len: 77}, 5) // splits seed 2: [10080,54100) keeps origin 4099
	p.sameBytes()
	p.noBlocksFlagged(whole)

	bg := make([]byte, 8) // rewriting the baseline is no change
	p.host.ReadAt(bg, 2000)
	p.write(2000, bg)
	p.write(10079, []byte{1, 2, 3}) // seed 5 into what is left of seed 2
	p.write(20001, []byte{4, 5, 6}) // inside that remainder
	p.write(0, []byte{0xff})
	p.write(7, []byte{1, 2})                                 // across a word boundary
	p.write(250, []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}) // across a block boundary
	p.write(4094, []byte{1, 2, 3, 4, 5, 6, 7})               // seed 4, unfilled gap, seed 2
	p.write(998, []byte{1, 2, 3, 4})                         // seed 1 into seed 4
	p.write(54096, bytes.Repeat([]byte{0x33}, 8))            // seed 2 into the unfilled gap
	p.write(100000, make([]byte, 700))                       // a row of zeros in the unfilled gap: no change
	p.write(100001, []byte{1})                               // one changed byte there
	row := bytes.Repeat([]byte{0x5a}, 1000)
	p.write(300123, row)
	p.write(size-1, []byte{0x77})
	p.sameBytes()

	c := p.changed(whole)
	if len(c) < 7 {
		t.Fatalf("only %d changed ranges found: %v", len(c), c)
	}
	for _, w := range []pool.Window{{Off: 5, Len: 1000}, {Off: 250, Len: 10}, {Off: 4095, Len: 3}, {Off: 300200, Len: 1}, {Off: size - 1, Len: 1}, {Off: 17, Len: 0}} {
		p.changed(w)
	}
	p.both("Reset", func(m memory) error { return m.Reset(c) })
	p.sameBytes()
	if c := p.changed(whole); c != nil {
		t.Fatalf("after Reset: %v", c)
	}
	p.noBlocksFlagged(whole)
	p.write(0, bytes.Repeat([]byte{0xc3}, size))
	p.both("Reset all", func(m memory) error { return m.Reset([]pool.Window{whole}) })
	p.sameBytes()

	p.both("ReadAt past the end", func(m memory) error { return m.ReadAt(make([]byte, 2), size-1) })
	p.both("Fill past the end", func(m memory) error { return m.Fill(pool.Window{Off: size, Len: 1}, 1) })
	p.both("Changed past the end", func(m memory) error { _, err := m.Changed(pool.Window{Off: -1, Len: 2}); return err })
	p.both("Reset past the end", func(m memory) error { return m.Reset([]pool.Window{{Off: 0, Len: size + 1}}) })
}

// TestMatchesSHMRandom: random writes, some equal to the baseline, then
// Changed on random windows and Reset of the whole arena, round after round.
func TestMatchesSHMRandom(t *testing.T) {
	const size = 512 << 10
	p := newPair(t, size)
	p.fill(pool.Window{Off: 64, Len: 200000}, 11)
	p.fill(pool.Window{Off: 250001, Len: 100000}, 12)
	rng := rand.New(rand.NewPCG(3, 5))
	whole := pool.Window{Off: 0, Len: size}
	for range 20 {
		for range 1 + rng.IntN(40) {
			off := rng.IntN(size - 600)
			b := make([]byte, 1+rng.IntN(600))
			for i := range b {
				if rng.IntN(3) != 0 {
					b[i] = byte(rng.Uint32())
				} else {
					p.host.ReadAt(b[i:i+1], off+i) // keep the current byte
				}
			}
			p.write(off, b)
		}
		for range 5 {
			off := rng.IntN(size)
			p.changed(pool.Window{Off: off, Len: rng.IntN(size - off + 1)})
		}
		p.both("Reset", func(m memory) error { return m.Reset([]pool.Window{whole}) })
		if c := p.changed(whole); c != nil {
			t.Fatalf("after Reset: %v", c)
		}
	}
	p.sameBytes()
}

// TestManyChangedBlocks overflows the first scan list and needs several
// gather rounds.
func TestManyChangedBlocks(t *testing.T) {
	const size = 4 << 20
	p := newPair(t, size)
	p.fill(pool.Window{Off: 0, Len: size}, 5)
	for off := 0; off < size; off += 2 * blockBytes {
		p.write(off+17, []byte{0, 1, 2})
	}
	c := p.changed(pool.Window{Off: 0, Len: size})
	if len(c) < initialListCap+gatherChunk {
		t.Fatalf("%d ranges; the test means to exceed the first list (%d) and one gather chunk (%d)", len(c), initialListCap, gatherChunk)
	}
	p.both("Reset", func(m memory) error { return m.Reset([]pool.Window{{Off: 0, Len: size}}) })
	p.sameBytes()
}

// TestBatchedTrips: a run changes hundreds of small ranges; finding them
// with their bytes and restoring them each take one trip to the device
// thread, not one per range.
func TestBatchedTrips(t *testing.T) {
	const size = 4 << 20
	p := newPair(t, size)
	whole := pool.Window{Off: 0, Len: size}
	p.fill(pool.Window{Off: 0, Len: size / 2}, 8)
	rng := rand.New(rand.NewPCG(9, 9))
	for range 600 {
		p.write(rng.IntN(size-300), bytes.Repeat([]byte{byte(rng.IntN(255) + 1)}, 1+rng.IntN(300)))
	}
	c := p.changed(whole)
	if len(c) < 300 {
		t.Fatalf("%d changed ranges; the test means hundreds", len(c))
	}
	before := p.gpu.Trips()
	if _, _, err := p.gpu.ChangedBytes(whole); err != nil {
		t.Fatal(err)
	}
	if err := p.gpu.Reset(c); err != nil {
		t.Fatal(err)
	}
	if trips := p.gpu.Trips() - before; trips != 2 {
		t.Errorf("ChangedBytes and Reset of %d ranges took %d trips to the device thread; want 2", len(c), trips)
	}
	if err := p.host.Reset(c); err != nil {
		t.Fatal(err)
	}
	p.sameBytes()
	if c := p.changed(whole); c != nil {
		t.Fatalf("after Reset: %v", c)
	}
}

func TestDesc(t *testing.T) {
	dev := openDevice(t)
	m, err := New(dev, 12345, IPC, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d := m.Desc()
	if d.Backend != protocol.BackendCUDA || d.Size != 12345 || len(d.IPCHandle) != 64 || d.Device != 0 || d.FDSocket != "" {
		t.Fatalf("Desc = %v", d)
	}
	if bytes.Equal(d.IPCHandle, make([]byte, 64)) {
		t.Fatal("IPC handle is all zeros")
	}
	if m.Ptr() == 0 {
		t.Fatal("Ptr is 0")
	}
	shared, err := New(dev, 12345, FD, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d = shared.Desc()
	if d.Size != 12345 || len(d.IPCHandle) != 0 || d.FDSocket == "" || d.MappedSize < 12345 || d.MappedSize%(2<<20) != 0 {
		t.Fatalf("Desc of an FD arena = %v; want a socket and a mapped size of whole 2 MiB pages", d)
	}
	if shared.Ptr()%(2<<20) != 0 {
		t.Errorf("FD arena at %#x; want it 2 MiB aligned", shared.Ptr())
	}
	if err := shared.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.FDSocket); err == nil {
		t.Errorf("socket %s still there after Close", d.FDSocket)
	}
}

// benchSize is the memory and window the benchmarks scan.
const benchSize = 256 << 20

// filledIPC is a benchSize IPC memory, closed at cleanup, whose one window
// w covering it all is filled from seed 42.
func filledIPC(b *testing.B) (m *Memory, w pool.Window) {
	b.Helper()
	m, err := New(openDevice(b), benchSize, IPC, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	w = pool.Window{Off: 0, Len: benchSize}
	if err := m.Fill(w, 42); err != nil {
		b.Fatal(err)
	}
	return m, w
}

// BenchmarkChanged scans a 256 MiB window in which a few 256-byte rows
// changed: the cost of checking one kernel call.
func BenchmarkChanged(b *testing.B) {
	m, w := filledIPC(b)
	rng := rand.New(rand.NewPCG(1, 1))
	row := make([]byte, 256)
	for range 8 {
		off := rng.IntN(benchSize/256) * 256
		if err := m.ReadAt(row, off); err != nil {
			b.Fatal(err)
		}
		for i := range row {
			row[i] = ^row[i] // every byte changes: one range per row
		}
		if err := m.WriteAt(row, off); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(benchSize)
	for b.Loop() {
		c, err := m.Changed(w)
		if err != nil || len(c) != 8 {
			b.Fatalf("Changed = %d ranges, %v; want 8", len(c), err)
		}
	}
}

// BenchmarkChangedClean is the common case: nothing changed.
func BenchmarkChangedClean(b *testing.B) {
	m, w := filledIPC(b)
	b.SetBytes(benchSize)
	for b.Loop() {
		if c, err := m.Changed(w); err != nil || c != nil {
			b.Fatalf("Changed = %v, %v", c, err)
		}
	}
}

// BenchmarkReset restores a 256 MiB window.
func BenchmarkReset(b *testing.B) {
	m, w := filledIPC(b)
	b.SetBytes(benchSize)
	for b.Loop() {
		if err := m.Reset([]pool.Window{w}); err != nil {
			b.Fatal(err)
		}
	}
}

// memory is what the pair runs on both backends: arena.Memory, which this
// package cannot import (arena builds on it).
type memory interface {
	ReadAt(p []byte, off int) error
	WriteAt(p []byte, off int) error
	Fill(w pool.Window, seed uint64) error
	Changed(w pool.Window) ([]pool.Window, error)
	Reset(ws []pool.Window) error
	ChangedIn(ws []pool.Window) ([]pool.Window, []byte, error)
}

// changedIn compares ChangedIn on both backends, ranges and bytes.
func (p *pair) changedIn(ws []pool.Window) []pool.Window {
	p.t.Helper()
	want, wantBytes, err := p.host.ChangedIn(ws)
	if err != nil {
		p.t.Fatal(err)
	}
	got, gotBytes, err := p.gpu.ChangedIn(ws)
	if err != nil {
		p.t.Fatalf("cuda ChangedIn(%d windows): %v", len(ws), err)
	}
	if !reflect.DeepEqual(got, want) {
		p.t.Fatalf("ChangedIn(%d windows):\ncuda %v\nshm  %v", len(ws), got, want)
	}
	if !bytes.Equal(gotBytes, wantBytes) {
		p.t.Fatalf("ChangedIn(%d windows): cuda's %d bytes differ from shm's %d", len(ws), len(gotBytes), len(wantBytes))
	}
	return got
}

// randomWindows draws sorted windows of [0, size) that neither overlap
// nor touch: mostly rows of a few hundred bytes at any alignment, as a
// case's footprints are, and now and then one larger than bigPiece.
func randomWindows(rng *rand.Rand, size, n int) []pool.Window {
	var ws []pool.Window
	at := rng.IntN(300)
	for range n {
		l := 1 + rng.IntN(700)
		if rng.IntN(20) == 0 {
			l = bigPiece + 1 + rng.IntN(3*bigPiece)
		}
		if at+l >= size {
			break
		}
		ws = append(ws, pool.Window{Off: at, Len: l})
		at += l + 1 + rng.IntN(4000)
	}
	return ws
}

// engineWindows is n windows of two bytes, 30 bytes apart, from the
// arena's start: a head element of vLLM's paged V cache per token, with a
// page of 16 tokens between one element's tokens and the next's.
func engineWindows(size, n int) []pool.Window {
	ws := make([]pool.Window, 0, n)
	for at := 0; len(ws) < n && at+2 <= size; at += 32 {
		ws = append(ws, pool.Window{Off: at, Len: 2})
	}
	return ws
}

// TestChangedInMatchesSHM: window scans of many small windows and a few
// large ones, across filled and unfilled baselines, give shm's ranges and
// bytes, in one trip to the device thread; a scan that finds more blocks
// than its entry buffer holds grows it and scans again.
func TestChangedInMatchesSHM(t *testing.T) {
	const size = 8<<20 + 77
	p := newPair(t, size)
	p.fill(pool.Window{Off: 100, Len: 3 << 20}, 21)
	p.fill(pool.Window{Off: 4<<20 + 3, Len: 3 << 20}, 22) // not on a word
	rng := rand.New(rand.NewPCG(21, 22))
	whole := pool.Window{Off: 0, Len: size}
	for round := range 12 {
		writes := 1 + rng.IntN(60)
		if round == 5 {
			writes = 3 * gatherChunk // more changed blocks than the first entry buffer
		}
		for range writes {
			off := rng.IntN(size - 800)
			b := make([]byte, 1+rng.IntN(800))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			p.write(off, b)
		}
		ws := randomWindows(rng, size, 50+rng.IntN(2000))
		switch round {
		case 5:
			ws = []pool.Window{{Off: 0, Len: size / 2}, {Off: size/2 + 1, Len: size/2 - 1}}
		case 7, 8:
			ws = engineWindows(size, 200_000)
			p.write(1<<20, bytes.Repeat([]byte{0xA5}, 3<<20)) // every window changed: more entries than one scan packs
		}
		before := p.gpu.Trips()
		if _, _, err := p.gpu.ChangedIn(ws); err != nil {
			t.Fatal(err)
		}
		if trips := p.gpu.Trips() - before; trips != 1 {
			t.Errorf("round %d: ChangedIn of %d windows took %d trips to the device thread; want 1", round, len(ws), trips)
		}
		p.changedIn(ws)
		p.changedIn(nil)
		p.both("Reset", func(m memory) error { return m.Reset([]pool.Window{whole}) })
		if c := p.changedIn(ws); c != nil {
			t.Fatalf("after Reset: %v", c)
		}
	}
	p.both("ChangedIn past the end", func(m memory) error {
		_, _, err := m.ChangedIn([]pool.Window{{Off: size - 1, Len: 2}})
		return err
	})
}

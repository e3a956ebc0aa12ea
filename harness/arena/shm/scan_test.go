package shm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/pool"
)

// naiveChanged is Changed by definition: the maximal runs of bytes of w
// that differ from want (the baseline, at arena offsets).
func naiveChanged(mem, want []byte, w pool.Window) []pool.Window {
	var out []pool.Window
	for i := w.Off; i < w.End(); i++ {
		if mem[i] == want[i] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End() == i {
			out[n-1].Len++
		} else {
			out = append(out, pool.Window{Off: i, Len: 1})
		}
	}
	return out
}

// scribble flips k random runs of bytes of w, some of them back to their
// old values (a write of the background is no change).
func scribble(rng *rand.Rand, mem []byte, w pool.Window, k int) {
	for range k {
		off := w.Off + rng.IntN(w.Len)
		n := min(1+rng.IntN(300), w.End()-off)
		for i := off; i < off+n; i++ {
			if rng.IntN(10) > 0 {
				mem[i] ^= byte(1 + rng.IntN(255))
			}
		}
	}
}

// TestChangedAgreesWithDefinition: Changed, ChangedIn and the word-wise
// run finder give exactly the naive byte-by-byte ranges, for windows
// sharing one seed's background at different offsets (compared against
// one copy of it), unfilled stretches and random writes.
func TestChangedAgreesWithDefinition(t *testing.T) {
	const size = 96 << 10
	m, _ := open(t, size)
	rng := rand.New(rand.NewPCG(3, 5))
	want := make([]byte, size)
	fills := []pool.Window{{Off: 1000, Len: 20000}, {Off: 30000, Len: 20000}, {Off: 60000, Len: 9000}}
	for i, w := range fills {
		seed := uint64(1 + i%2) // windows 0 and 2 share a seed
		if err := m.Fill(w, seed); err != nil {
			t.Fatal(err)
		}
		pool.FillBackground(want[w.Off:w.End()], seed, 0)
	}
	for round := range 30 {
		scribble(rng, m.Bytes(), pool.Window{Off: 0, Len: size}, 1+rng.IntN(8))
		all := pool.Window{Off: 0, Len: size}
		got, err := m.Changed(all)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(naiveChanged(m.Bytes(), want, all), got); diff != "" {
			t.Fatalf("round %d: Changed (-want +got):\n%s", round, diff)
		}
		checkChangedIn(t, m, want, mergeRandom(rng, size), round)
		if err := m.Reset(got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Bytes(), want) {
			t.Fatalf("round %d: Reset left bytes off the baseline", round)
		}
	}
}

// mergeRandom draws sorted windows that neither overlap nor touch.
func mergeRandom(rng *rand.Rand, size int) []pool.Window {
	var ws []pool.Window
	for at := rng.IntN(500); at < size; {
		n := min(1+rng.IntN(3000), size-at)
		ws = append(ws, pool.Window{Off: at, Len: n})
		at += n + 1 + rng.IntN(4000)
	}
	return ws
}

// openTmpfs is open in a run directory on /dev/shm, where FillLazy
// leaves holes; it skips the test on a machine without a tmpfs there.
func openTmpfs(t *testing.T, size int) *Memory {
	t.Helper()
	root, err := os.MkdirTemp("/dev/shm", "kvharness-test-")
	if err != nil {
		t.Skipf("no /dev/shm to hold a sparse arena: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	m, _ := openIn(t, root, size)
	if !m.Sparse() {
		t.Skip("/dev/shm is not a tmpfs here: FillLazy fills densely")
	}
	return m
}

// lazyArena is a lazily filled window of 64 pages and its background.
func lazyArena(t *testing.T) (*Memory, pool.Window, []byte) {
	t.Helper()
	m := openTmpfs(t, 80*pageBytes)
	w := pool.Window{Off: 1000, Len: 64*pageBytes + 123} // ragged ends: partly covered pages
	if err := m.FillLazy(w, 7); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, len(m.Bytes()))
	pool.FillBackground(want[w.Off:w.End()], 7, 0)
	return m, w, want
}

func blocks(t *testing.T, m *Memory) int64 {
	t.Helper()
	b, err := m.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLazyFillIsHoles: a lazily filled window allocates only its ragged
// end pages, reads as unchanged, and holds the background byte for byte
// wherever it is materialized.
func TestLazyFillIsHoles(t *testing.T) {
	m, w, want := lazyArena(t)
	// New reserves the whole file; FillLazy gives back the window's whole
	// pages (1..63), keeping only the ragged ones at its ends.
	whole := (w.End()/pageBytes - (w.Off+pageBytes-1)/pageBytes)
	if b, held := blocks(t, m), int64(len(m.Bytes())/pageBytes-whole)*pageBytes/512; b > held {
		t.Fatalf("lazy fill left %d blocks allocated; want %d at most (the pages outside the window's whole pages)", b, held)
	}
	if got, err := m.Changed(w); err != nil || len(got) != 0 {
		t.Fatalf("Changed after FillLazy = %v, %v; want nothing", got, err)
	}
	mat := []pool.Window{{Off: 10 * pageBytes, Len: 256}, {Off: 40*pageBytes - 10, Len: 20}}
	if err := m.Materialize(mat); err != nil {
		t.Fatal(err)
	}
	for _, x := range mat {
		if !bytes.Equal(m.Bytes()[x.Off:x.End()], want[x.Off:x.End()]) {
			t.Errorf("materialized %v does not hold the background", x)
		}
	}
	if got, err := m.Changed(w); err != nil || len(got) != 0 {
		t.Fatalf("Changed after Materialize = %v, %v; want nothing", got, err)
	}
}

// TestStrayWritesToHolesAreSeen: a write to a page the harness never
// materialized, whichever way it comes (this mapping, another mapping of
// the file, write(2) on another descriptor), grows the block count and is
// named by Strays and Changed; Reset materializes it; Release gives the
// pages back as holes.
func TestStrayWritesToHolesAreSeen(t *testing.T) {
	for _, how := range []string{"mapping", "other-mapping", "pwrite"} {
		t.Run(how, func(t *testing.T) {
			m, w, want := lazyArena(t)
			before := blocks(t, m)
			off := 30*pageBytes + 77
			strayWrite(t, m, how, off, []byte{0xAB, 0xCD})
			if blocks(t, m) == before {
				t.Fatalf("a write to a hole did not grow the file")
			}
			strays, err := m.Strays(w)
			if err != nil {
				t.Fatal(err)
			}
			if len(strays) != 1 || !strays[0].Contains(off) || strays[0].Len != pageBytes {
				t.Fatalf("Strays = %v; want the page of %d", strays, off)
			}
			got, err := m.Changed(w)
			if err != nil || len(got) == 0 || !got[0].Contains(off) && got[0].Off > off {
				t.Fatalf("Changed = %v, %v; want ranges covering %d", got, err, off)
			}
			if err := m.Reset(got); err != nil {
				t.Fatal(err)
			}
			if again, _ := m.Changed(w); len(again) != 0 {
				t.Fatalf("after Reset Changed = %v", again)
			}
			if !bytes.Equal(m.Bytes()[off-77:off-77+pageBytes], want[off-77:off-77+pageBytes]) {
				t.Fatalf("Reset did not give the page its background")
			}
			if err := m.Release(w); err != nil {
				t.Fatal(err)
			}
			if b := blocks(t, m); b > before {
				t.Fatalf("after Release %d blocks; before the write %d", b, before)
			}
			if got, _ := m.Changed(w); len(got) != 0 {
				t.Fatalf("after Release Changed = %v", got)
			}
		})
	}
}

// TestReleaseKeepsStrayEvidence: Release frees held pages with one wide
// punch only while no hole is written; a stray page between two held ones
// survives a Release and is still named by Strays and Changed.
func TestReleaseKeepsStrayEvidence(t *testing.T) {
	m, w, _ := lazyArena(t)
	if err := m.Materialize([]pool.Window{{Off: 10 * pageBytes, Len: 1}, {Off: 50 * pageBytes, Len: 1}}); err != nil {
		t.Fatal(err)
	}
	off := 30*pageBytes + 5
	strayWrite(t, m, "other-mapping", off, []byte{0x5A})
	if err := m.Release(w); err != nil {
		t.Fatal(err)
	}
	if m.Held() != 0 {
		t.Fatalf("after Release %d bytes held; want 0", m.Held())
	}
	strays, err := m.Strays(w)
	if err != nil || len(strays) != 1 || !strays[0].Contains(off) {
		t.Fatalf("Strays after Release = %v, %v; want the page of %d", strays, err, off)
	}
	if got, err := m.Changed(w); err != nil || len(got) == 0 {
		t.Fatalf("Changed after Release = %v, %v; want the stray", got, err)
	}
}

// strayWrite writes b at arena offset off the way how says.
func strayWrite(t *testing.T, m *Memory, how string, off int, b []byte) {
	t.Helper()
	switch how {
	case "mapping":
		copy(m.Bytes()[off:], b)
	case "other-mapping":
		f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", m.file.Fd()), os.O_RDWR, 0) // another open file of the arena
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		other, err := unix.Mmap(int(f.Fd()), 0, len(m.Bytes()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		copy(other[off:], b)
		unix.Munmap(other)
	case "pwrite":
		f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", m.file.Fd()), os.O_RDWR, 0) // another open file of the arena
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(b, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLazyAgreesWithDense: the same writes into materialized pages of a
// lazy window and into a densely filled one read back as the same
// changes, through Changed and ChangedIn alike.
func TestLazyAgreesWithDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	lazy, w, _ := lazyArena(t)
	dense, _ := open(t, 80*pageBytes)
	if err := dense.Fill(w, 7); err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		ws := mergeRandom(rng, w.End()-w.Off)
		for i := range ws {
			ws[i].Off += w.Off
			ws[i].Len = min(ws[i].Len, w.End()-ws[i].Off)
		}
		if err := lazy.Materialize(ws); err != nil {
			t.Fatal(err)
		}
		for _, x := range ws {
			if rng.IntN(2) == 0 {
				continue
			}
			scribble(rng, lazy.Bytes(), x, 2)
			copy(dense.Bytes()[x.Off:x.End()], lazy.Bytes()[x.Off:x.End()])
		}
		a, _ := lazy.Changed(w)
		b, _ := dense.Changed(w)
		if diff := cmp.Diff(b, a); diff != "" {
			t.Fatalf("round %d: lazy Changed differs from dense (-dense +lazy):\n%s", round, diff)
		}
		ai, ab, _ := lazy.ChangedIn(ws)
		bi, bb, _ := dense.ChangedIn(ws)
		if diff := cmp.Diff(bi, ai); diff != "" || !bytes.Equal(ab, bb) {
			t.Fatalf("round %d: lazy ChangedIn differs from dense:\n%s", round, diff)
		}
		lazy.Reset(a)
		dense.Reset(b)
		if round%5 == 4 {
			if err := lazy.Release(w); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestFarPagesDoNotGrowTheCopy: a page materialized far into a large lazy
// window (past copyBytes) holds its background, computed for that page
// alone: the seed's background copy does not grow to reach it. A page
// nearer in grows the copy instead (TestNearPagesGrowTheCopy).
func TestFarPagesDoNotGrowTheCopy(t *testing.T) {
	size := 2 * copyBytes // a hole but for a few pages: tmpfs allocates only those
	m := openTmpfs(t, size)
	w := pool.Window{Off: 3 * pageBytes, Len: size - 3*pageBytes}
	if err := m.FillLazy(w, 9); err != nil {
		t.Fatal(err)
	}
	far := []pool.Window{{Off: size - 2*pageBytes + 5, Len: 300}, {Off: size / 2, Len: pageBytes}}
	if err := m.Materialize(far); err != nil {
		t.Fatal(err)
	}
	for _, x := range far {
		want := make([]byte, x.Len)
		pool.FillBackground(want, 9, x.Off-w.Off)
		if !bytes.Equal(m.Bytes()[x.Off:x.End()], want) {
			t.Errorf("materialized %v does not hold the background", x)
		}
	}
	if n := len(m.bg[9]); n >= size/2 {
		t.Errorf("the background copy grew to %d bytes to materialize two pages", n)
	}
	if got, err := m.Changed(w); err != nil || len(got) != 0 {
		t.Fatalf("Changed after Materialize = %v, %v; want nothing", got, err)
	}
}

// TestNearPagesGrowTheCopy: within copyBytes, a lazy window's pages are
// compared with the seed's background copy, which grows to reach them,
// so that every later scan and reset of them copies instead of computing.
func TestNearPagesGrowTheCopy(t *testing.T) {
	size := 4096 * pageBytes // 16 MiB
	m := openTmpfs(t, size)
	w := pool.Window{Off: 3 * pageBytes, Len: size - 3*pageBytes}
	if err := m.FillLazy(w, 9); err != nil {
		t.Fatal(err)
	}
	far := pool.Window{Off: size - 2*pageBytes, Len: pageBytes}
	if err := m.Materialize([]pool.Window{far}); err != nil {
		t.Fatal(err)
	}
	if n := len(m.bg[9]); n < far.End()-w.Off {
		t.Errorf("the background copy is %d bytes; it should reach the page at %d", n, far.End()-w.Off)
	}
	want := make([]byte, far.Len)
	pool.FillBackground(want, 9, far.Off-w.Off)
	if !bytes.Equal(m.Bytes()[far.Off:far.End()], want) {
		t.Errorf("materialized %v does not hold the background", far)
	}
	m.Bytes()[far.Off+17] ^= 1
	if got, err := m.Changed(w); err != nil || len(got) != 1 || got[0].Off != far.Off+17 {
		t.Fatalf("Changed after one flipped byte = %v, %v; want [%d]", got, err, far.Off+17)
	}
}

// TestPageRunsAgreeWithBits: the word-wise run finder ends a run of held
// pages or of holes exactly where a page-by-page walk of the bits does,
// for sparse and dense bit patterns and any start and end.
func TestPageRunsAgreeWithBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for round := range 200 {
		l := newLazyPages(300 * pageBytes)
		for p := range 300 {
			if rng.IntN(1+round%7) != 0 {
				l.clear(p)
			}
		}
		p := rng.IntN(300)
		end := p + 1 + rng.IntN(300-p)
		want := p + 1
		for want < end && l.has(want) == l.has(p) {
			want++
		}
		if got, held := l.run(p, end); got != want || held != l.has(p) {
			t.Fatalf("round %d: run(%d, %d) = %d, %v; want %d, %v", round, p, end, got, held, want, l.has(p))
		}
	}
}

// TestPageRangesAgreeWithBits: setting and clearing ranges of pages a word
// of bits at a time leaves the bits, the count of holes and the pages'
// last uses as page-by-page updates of a model do, for ranges within a
// word, across words, and whole words.
func TestPageRangesAgreeWithBits(t *testing.T) {
	const n = 300
	rng := rand.New(rand.NewPCG(3, 9))
	l := newLazyPages(n * pageBytes)
	held := make([]bool, n)
	for i := range held {
		held[i] = true
	}
	used := map[int]bool{}
	for round := range 2000 {
		p0 := rng.IntN(n)
		p1 := p0 + rng.IntN(min(n-p0, []int{3, 70, 200}[round%3])+1)
		if rng.IntN(2) == 0 {
			l.setRange(p0, p1)
			for p := p0; p < p1; p++ {
				held[p] = true
			}
			if p1 > p0 && rng.IntN(3) == 0 { // a held page used, as Materialize notes it
				p := p0 + rng.IntN(p1-p0)
				if l.used == nil {
					l.used = map[int]uint32{}
				}
				l.used[p], used[p] = 1, true
			}
		} else {
			l.clearRange(p0, p1)
			for p := p0; p < p1; p++ {
				held[p] = false
				delete(used, p)
			}
		}
		holes := 0
		for p, h := range held {
			if l.has(p) != h {
				t.Fatalf("round %d: page %d held = %v; want %v", round, p, l.has(p), h)
			}
			if !h {
				holes++
			}
		}
		if l.holes != holes || len(l.used) != len(used) {
			t.Fatalf("round %d: %d holes and %d used pages; want %d and %d", round, l.holes, len(l.used), holes, len(used))
		}
	}
}

// TestArenasShareTheBackground: arenas filled with one seed compare
// against one copy of its background, computed once, whichever of them
// asked first and however far; the copy holds the background byte for
// byte, and an arena holding a shorter copy reads on as the copy grows.
func TestArenasShareTheBackground(t *testing.T) {
	const seed = 0x5eed5 // a seed of this test's own: other tests grow theirs
	a, _ := open(t, 3<<20)
	b, _ := open(t, 3<<20)
	if err := a.Fill(pool.Window{Off: 4096, Len: 100 << 10}, seed); err != nil {
		t.Fatal(err)
	}
	short := a.bg[seed]
	if err := b.Fill(pool.Window{Off: 0, Len: 3 << 20}, seed); err != nil { // grows the copy past a's
		t.Fatal(err)
	}
	long := b.bg[seed]
	if len(long) < 3<<20 || len(short) >= len(long) {
		t.Fatalf("copies of %d and %d bytes; want the second grown to 3 MiB", len(short), len(long))
	}
	want := pool.Background(seed, 0, len(long))
	if !bytes.Equal(long, want) || !bytes.Equal(short, want[:len(short)]) {
		t.Fatal("a shared copy does not hold the seed's background")
	}
	if err := a.Fill(pool.Window{Off: 1 << 20, Len: 2 << 20}, seed); err != nil { // now past a's own copy
		t.Fatal(err)
	}
	if &a.bg[seed][0] != &long[0] {
		t.Error("the first arena grew a copy of its own instead of taking the shared one")
	}
	for _, m := range []*Memory{a, b} {
		if got, err := m.Changed(pool.Window{Off: 0, Len: 3 << 20}); err != nil || len(got) != 0 {
			t.Errorf("Changed after the fills = %v, %v; want nothing", got, err)
		}
	}
}

// TestSharedBackgroundsStayBounded: the shared copies of many seeds hold
// what the cache keeps at most, the latest seed's kept; an arena keeps the
// copy it holds whatever was dropped; a copy larger than that alone is
// handed out and not kept.
func TestSharedBackgroundsStayBounded(t *testing.T) {
	const keep = 4 * growBytes
	c := backgrounds{copies: map[uint64]*bgCopy{}, keep: keep}
	first := c.get(1, growBytes, growBytes)
	for seed := uint64(2); seed < 8; seed++ {
		c.get(seed, growBytes, growBytes)
		total := 0
		for _, e := range c.copies {
			total += len(e.b)
		}
		if total > keep || c.copies[seed] == nil {
			t.Fatalf("after seed %d: %d bytes kept (at most %d), latest kept: %v", seed, total, keep, c.copies[seed] != nil)
		}
	}
	if c.copies[1] != nil {
		t.Error("the least recently used seed was kept")
	}
	if !bytes.Equal(first, pool.Background(1, 0, len(first))) {
		t.Error("a dropped copy changed under its holder")
	}
	if huge := c.get(9, keep+1, 0); len(huge) <= keep || c.copies[9] != nil {
		t.Errorf("a copy larger than the cache keeps (%d bytes) was kept", len(huge))
	}
}

// TestReleaseIdleKeepsRecentPages: ReleaseIdle gives back only the pages
// no recent Materialize named; a kept page is still compared whole, so a write to it anywhere is
// seen, and a written hole survives a ReleaseIdle as evidence.
func TestReleaseIdleKeepsRecentPages(t *testing.T) {
	m, w, want := lazyArena(t)
	page := func(p int) pool.Window { return pool.Window{Off: p * pageBytes, Len: 1} }
	for _, p := range []int{10, 11, 20, 40} {
		if err := m.Materialize([]pool.Window{page(p)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Materialize([]pool.Window{page(30), page(31)}); err != nil { // the latest call
		t.Fatal(err)
	}
	if got := m.HeldIn(w, 2); got != 3*pageBytes {
		t.Fatalf("HeldIn(age 2) = %d; want the 3 pages calls before the last two named", got)
	}
	if err := m.ReleaseIdle(w, 2); err != nil {
		t.Fatal(err)
	}
	for p := 10; p <= 40; p++ {
		if held, keep := m.lazy.has(p), p == 30 || p == 31 || p == 40; held != keep {
			t.Errorf("page %d held = %v after ReleaseIdle(age 2); want %v", p, held, keep)
		}
	}
	if m.Held() != 3*pageBytes || m.HeldIn(w, 0) != 3*pageBytes {
		t.Fatalf("Held = %d, HeldIn = %d; want 3 pages", m.Held(), m.HeldIn(w, 0))
	}
	// A kept page written far from what any case named: Changed sees it.
	off := 40*pageBytes + 3000
	strayWrite(t, m, "other-mapping", off, []byte{want[off] ^ 0x5A})
	if got, err := m.Changed(w); err != nil || len(got) != 1 || got[0] != (pool.Window{Off: off, Len: 1}) {
		t.Fatalf("Changed after a write to a kept page = %v, %v; want [%d,%d)", got, err, off, off+1)
	}
	if err := m.Reset([]pool.Window{{Off: off, Len: 1}}); err != nil {
		t.Fatal(err)
	}
	// A written hole between kept pages: ReleaseIdle keeps it as evidence.
	if err := m.Materialize([]pool.Window{page(40)}); err != nil {
		t.Fatal(err)
	}
	hole := 35*pageBytes + 9
	strayWrite(t, m, "pwrite", hole, []byte{0x77})
	if err := m.ReleaseIdle(w, 1); err != nil {
		t.Fatal(err)
	}
	if m.lazy.has(30) || !m.lazy.has(40) {
		t.Fatalf("ReleaseIdle(age 1) with a written hole: page 30 held %v, page 40 held %v; want false, true", m.lazy.has(30), m.lazy.has(40))
	}
	strays, err := m.Strays(w)
	if err != nil || len(strays) != 1 || !strays[0].Contains(hole) {
		t.Fatalf("Strays after ReleaseIdle = %v, %v; want the page of %d", strays, err, hole)
	}
}

// smallWindows draws sorted windows of a few bytes, a few bytes apart,
// inside w: an engine cache's footprints (vLLM's paged V: two bytes a
// head element), which ChangedIn compares in clusters.
func smallWindows(rng *rand.Rand, w pool.Window) []pool.Window {
	var ws []pool.Window
	for at := w.Off + rng.IntN(8); at < w.End(); {
		n := min(1+rng.IntN(16), w.End()-at)
		ws = append(ws, pool.Window{Off: at, Len: n})
		at += n + 1 + rng.IntN(48)
		if rng.IntN(200) == 0 {
			at += clusterBytes // a gap no cluster spans
		}
	}
	return ws
}

// TestClustersAgreeWithDefinition: ChangedIn over many small windows
// (compared in clusters against one baseline) gives exactly the naive
// ranges and bytes, near the start of a filled window (the seed's copy),
// and in pages materialized deep in a lazy one (a background computed
// for the cluster), with clusters cut by the edge of the fill.
func TestClustersAgreeWithDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	check := func(t *testing.T, m *Memory, want []byte, w pool.Window) {
		t.Helper()
		for round := range 10 {
			ws := smallWindows(rng, w)
			if err := m.Materialize(ws); err != nil {
				t.Fatal(err)
			}
			for range 1 + rng.IntN(40) {
				x := ws[rng.IntN(len(ws))]
				scribble(rng, m.Bytes(), x, 1+rng.IntN(3))
			}
			gotIn := checkChangedIn(t, m, want, ws, round)
			if err := m.Reset(gotIn); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("dense", func(t *testing.T) {
		const size = 512 << 10
		m, _ := open(t, size)
		fill := pool.Window{Off: 3000, Len: size - 9000} // clusters cross its edges into bytes never filled
		if err := m.Fill(fill, 5); err != nil {
			t.Fatal(err)
		}
		want := make([]byte, size)
		pool.FillBackground(want[fill.Off:fill.End()], 5, 0)
		check(t, m, want, pool.Window{Off: 0, Len: size})
	})
	t.Run("far", func(t *testing.T) {
		size := 2 * copyBytes
		m := openTmpfs(t, size)
		fill := pool.Window{Off: 3 * pageBytes, Len: size - 3*pageBytes}
		if err := m.FillLazy(fill, 9); err != nil {
			t.Fatal(err)
		}
		deep := pool.Window{Off: size - 64*pageBytes, Len: 64 * pageBytes}
		want := make([]byte, size)
		pool.FillBackground(want[deep.Off:deep.End()], 9, deep.Off-fill.Off)
		check(t, m, want, deep)
		if n := len(m.bg[9]); n >= size/2 {
			t.Errorf("the background copy grew to %d bytes to scan a few deep pages", n)
		}
	})
}

// checkChangedIn compares ChangedIn(ws) with the byte-by-byte definition:
// the maximal runs within each window where m differs from want, and
// their bytes. It returns the runs found.
func checkChangedIn(t *testing.T, m *Memory, want []byte, ws []pool.Window, round int) []pool.Window {
	t.Helper()
	var wantIn []pool.Window
	var wantBytes []byte
	for _, w := range ws {
		for _, r := range naiveChanged(m.Bytes(), want, w) {
			wantIn = append(wantIn, r)
			wantBytes = append(wantBytes, m.Bytes()[r.Off:r.End()]...)
		}
	}
	gotIn, gotBytes, err := m.ChangedIn(ws)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantIn, gotIn); diff != "" {
		t.Fatalf("round %d: ChangedIn (-want +got):\n%s", round, diff)
	}
	if !bytes.Equal(wantBytes, gotBytes) {
		t.Fatalf("round %d: ChangedIn bytes differ", round)
	}
	return gotIn
}

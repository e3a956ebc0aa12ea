package cuda

import (
	"bytes"
	"slices"
	"syscall"
	"testing"
)

// TestRoundPieces: pieces round out to the granularity and merge where
// they meet; pieces an importer is handed must already be so.
func TestRoundPieces(t *testing.T) {
	const g = 2 << 20
	got, err := roundPieces([]Piece{{5 << 30, 100}, {10, 20}, {g - 1, 2}, {0, 0}}, g, 6<<30)
	want := []Piece{{0, 2 * g}, {5 << 30, g}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("roundPieces = %v, %v; want %v", got, err, want)
	}
	if _, err := roundPieces([]Piece{{6 << 30, 1}}, g, 6<<30); err == nil {
		t.Error("a piece past the span accepted")
	}
	// More pieces than MaxPieces merge across the narrowest gaps: here
	// first the gap between pieces 2 and 3, a granule narrower than the
	// others, never the far piece's.
	step := MergeGap + 4*g
	var many []Piece
	for i := range MaxPieces + 3 {
		many = append(many, Piece{Off: i * step, Len: g})
	}
	many[3].Off-- // rounds out to [3·step-g, 3·step+g): a granule nearer piece 2
	far := Piece{Off: 1 << 40, Len: g}
	got, err = roundPieces(append(slices.Clone(many), far), g, 1<<41)
	if err != nil || len(got) != MaxPieces || got[len(got)-1] != far {
		t.Fatalf("%d pieces capped to %d (%v); want %d, the far piece apart", len(many)+1, len(got), err, MaxPieces)
	}
	covers := func(w Piece) bool {
		for _, p := range got {
			if p.Off <= w.Off && w.End() <= p.End() {
				return true
			}
		}
		return false
	}
	for _, w := range many {
		if !covers(w) {
			t.Fatalf("piece %v lost in merging", w)
		}
	}
	if !covers(Piece{2 * step, step + g}) {
		t.Errorf("the narrowest gap (pieces 2 and 3) was not merged: %v", got[:4])
	}
	for _, bad := range [][]Piece{nil, {{g, g}, {0, g}}, {{0, g}, {g - 1, g}}, {{1, g}}} {
		if err := checkPieces(bad, g, 8*g); err == nil {
			t.Errorf("pieces %v accepted", bad)
		}
	}
}

// TestRoundPiecesMergesNearGaps: pieces within MergeGap of each other
// become one allocation (one create, export, import and map each, the
// cost of opening a far pool on a GPU), pieces further apart stay apart;
// the windows of a far pool (its start, slot 65,536, 2 GiB, 4 GiB and its
// end, the next pool's start beside it) take three pieces, not five.
func TestRoundPiecesMergesNearGaps(t *testing.T) {
	const g = 2 << 20
	got, err := roundPieces([]Piece{{0, g}, {g + MergeGap, g}, {3*g + 2*MergeGap, g}}, g, 1<<30)
	want := []Piece{{0, 2*g + MergeGap}, {3*g + 2*MergeGap, g}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("roundPieces = %v, %v; want %v: a gap of MergeGap merged, one a granule wider kept", got, err, want)
	}
	windows := farWindows(2, g)
	got, err = roundPieces(windows, g, 1<<34)
	if err != nil || len(got) != 5 {
		t.Fatalf("two far pools' %d windows in %d pieces (%v, %v); want 5: [start, 16 MiB], 2 GiB, [4 GiB, the next pool's 16 MiB], 2 GiB, [4 GiB, end]",
			len(windows), len(got), got, err)
	}
	backed := 0
	for _, p := range got {
		backed += p.Len
	}
	if backed > 20*MergeGap {
		t.Errorf("%d bytes backed for %d windows: the merged gaps cost too much", backed, len(windows))
	}
}

// TestSparseReservation: a reservation past 4 GiB backs only its pieces;
// bytes written through each piece read back, and the same bytes show
// through an import of its descriptor mapped with the same pieces (what a
// plugin maps), past 2^31 and 2^32 bytes of offset, at the memory cost of
// the pieces alone.
func TestSparseReservation(t *testing.T) {
	d := openDevice(t)
	const span = 5 << 30
	want := []Piece{{0, 4096}, {1<<31 - 4096, 8192}, {1<<32 - 100, 200}, {span - 4096, 4096}}
	s, err := d.AllocSparse(span, want)
	must(t, err)
	t.Cleanup(func() { must(t, s.Free()) })
	if s.Span() < span || s.Size() > 8<<20*len(want) {
		t.Fatalf("span %d, backed %d: want a span of at least %d and only the pieces backed", s.Span(), s.Size(), span)
	}
	if _, err := s.ExportFD(); err == nil {
		t.Error("ExportFD of a sparse reservation gave one descriptor; want an error naming ExportFDs")
	}
	fds, err := s.ExportFDs()
	must(t, err)
	if len(fds) != len(s.Pieces()) {
		t.Fatalf("%d descriptors for %d pieces", len(fds), len(s.Pieces()))
	}
	imp, err := d.ImportSparse(fds, s.Span(), s.Pieces())
	for _, fd := range fds {
		syscall.Close(fd)
	}
	must(t, err)
	t.Cleanup(func() { must(t, imp.Free()) })
	// Every piece is written before any is read back: pieces that shared
	// memory would show the last one's pattern.
	for i, p := range want {
		must(t, d.HtoD(s.Ptr().Add(p.Off), bytes.Repeat([]byte{byte(0xa0 + i)}, p.Len)))
	}
	for i, p := range want {
		pattern := bytes.Repeat([]byte{byte(0xa0 + i)}, p.Len)
		got := make([]byte, p.Len)
		must(t, d.DtoH(got, imp.Ptr().Add(p.Off)))
		if !bytes.Equal(got, pattern) {
			t.Fatalf("piece %d at offset %d: the import reads % x…, want % x…", i, p.Off, got[:8], pattern[:8])
		}
	}
}

// farWindows are the windows of n far pools laid end to end (each past
// 4 GiB, with a granule of guard between): its start, slot 65,536 of a
// bf16 row at 16 MiB, the pages at 2 GiB and 4 GiB, and its end, as a
// default store row's sets back them on a GPU.
func farWindows(n, g int) []Piece {
	const pool = 1<<32 + 32<<20 // pool.FarBytes
	var out []Piece
	for i := range n {
		base := i * (pool + g)
		for _, off := range []int{0, 16 << 20, 1<<31 - g/2, 1<<32 - g/2, pool - g} {
			out = append(out, Piece{Off: base + off, Len: g})
		}
	}
	return out
}

// BenchmarkSparseFarPools: what opening a far store row's reservation
// costs on a GPU, both sides: reserve and back the pieces of nine far
// pools (three pools of three sets), export a descriptor a piece, import
// and map them as a plugin does, and free both. On a GPU machine:
//
//	TESTFLAGS='-test.run=^$ -test.bench=SparseFarPools' ./scripts/gpu-test tests
func BenchmarkSparseFarPools(b *testing.B) {
	d := openDevice(b)
	want := farWindows(9, 2<<20)
	span := want[len(want)-1].End()
	pieces := 0
	for b.Loop() {
		s, err := d.AllocSparse(span, want)
		must(b, err)
		fds, err := s.ExportFDs()
		must(b, err)
		imp, err := d.ImportSparse(fds, s.Span(), s.Pieces())
		for _, fd := range fds {
			syscall.Close(fd)
		}
		must(b, err)
		must(b, imp.Free())
		must(b, s.Free())
		pieces = len(s.Pieces())
	}
	b.ReportMetric(float64(pieces), "pieces")
	b.ReportMetric(float64(len(want)), "windows")
}

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
	for _, bad := range [][]Piece{nil, {{g, g}, {0, g}}, {{0, g}, {g - 1, g}}, {{1, g}}} {
		if err := checkPieces(bad, g, 8*g); err == nil {
			t.Errorf("pieces %v accepted", bad)
		}
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
	fd, err := s.ExportFD()
	must(t, err)
	imp, err := d.ImportSparse(fd, s.Span(), s.Pieces())
	syscall.Close(fd)
	must(t, err)
	t.Cleanup(func() { must(t, imp.Free()) })
	for i, p := range want {
		pattern := bytes.Repeat([]byte{byte(0xa0 + i)}, p.Len)
		must(t, d.HtoD(s.Ptr().Add(p.Off), pattern))
		got := make([]byte, p.Len)
		must(t, d.DtoH(got, imp.Ptr().Add(p.Off)))
		if !bytes.Equal(got, pattern) {
			t.Fatalf("piece %d at offset %d: the import reads % x…, want % x…", i, p.Off, got[:8], pattern[:8])
		}
	}
}

package baseline

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/kvharness/kvharness/harness/pool"
)

// TestBaselineMatchesCopy checks the span list against what pool.SHM keeps:
// a full copy of the background of every filled window, zeros elsewhere.
func TestBaselineMatchesCopy(t *testing.T) {
	const size = 20000
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 50 {
		var bl Spans
		model := make([]byte, size)
		for range rng.IntN(12) {
			w := randWindow(rng, size)
			seed := rng.Uint64N(4) // few seeds, so merges happen
			bl.Fill(w, seed)
			pool.FillBackground(model[w.Off:w.End()], seed, 0) // as pool.SHM does
		}
		checkSpans(t, bl.List)
		for range 20 {
			w := randWindow(rng, size)
			got := make([]byte, w.Len)
			bl.Expected(got, w.Off)
			if !bytes.Equal(got, model[w.Off:w.End()]) {
				t.Fatalf("round %d: baseline of %+v differs from the copy", round, w)
			}
			checkPieces(t, w, bl.Pieces(w))
		}
	}
}

func randWindow(rng *rand.Rand, size int) pool.Window {
	off := rng.IntN(size)
	return pool.Window{Off: off, Len: rng.IntN(size - off + 1)}
}

func checkSpans(t *testing.T, spans []Span) {
	t.Helper()
	for i, s := range spans {
		if s.Len <= 0 {
			t.Fatalf("empty span %+v", s)
		}
		if i > 0 && spans[i-1].End() > s.Off {
			t.Fatalf("spans %+v and %+v overlap or are out of order", spans[i-1], s)
		}
		if i > 0 && spans[i-1].End() == s.Off && spans[i-1].Seed == s.Seed && spans[i-1].Origin == s.Origin {
			t.Fatalf("touching spans of one seed not merged: %+v %+v", spans[i-1], s)
		}
	}
}

func checkPieces(t *testing.T, w pool.Window, ps []Piece) {
	t.Helper()
	at := w.Off
	for _, p := range ps {
		if p.Off != at || p.Len <= 0 {
			t.Fatalf("pieces of %+v: %+v does not start at %d or is empty", w, p, at)
		}
		at = p.End()
	}
	if at != w.End() && w.Len > 0 {
		t.Fatalf("pieces of %+v end at %d", w, at)
	}
}

func TestBaselineOverwrite(t *testing.T) {
	var bl Spans
	bl.Fill(pool.Window{Off: 0, Len: 100}, 1)
	bl.Fill(pool.Window{Off: 40, Len: 20}, 2)
	bl.Fill(pool.Window{Off: 150, Len: 10}, 1)
	want := []Span{{pool.Window{Off: 0, Len: 40}, 1, 0}, {pool.Window{Off: 40, Len: 20}, 2, 40}, {pool.Window{Off: 60, Len: 40}, 1, 0}, {pool.Window{Off: 150, Len: 10}, 1, 150}}
	if !equalSpans(bl.List, want) {
		t.Fatalf("spans = %+v; want %+v", bl.List, want)
	}
	// Seed 1 again over [40,60), but counted from 40: a different background
	// from the first fill's, so no merge.
	bl.Fill(pool.Window{Off: 40, Len: 20}, 1)
	want = []Span{{pool.Window{Off: 0, Len: 40}, 1, 0}, {pool.Window{Off: 40, Len: 20}, 1, 40}, {pool.Window{Off: 60, Len: 40}, 1, 0}, {pool.Window{Off: 150, Len: 10}, 1, 150}}
	if !equalSpans(bl.List, want) {
		t.Fatalf("after refill spans = %+v; want %+v", bl.List, want)
	}
	bl.Fill(pool.Window{Off: 0, Len: 100}, 1) // the first fill again: one span
	want = []Span{{pool.Window{Off: 0, Len: 100}, 1, 0}, {pool.Window{Off: 150, Len: 10}, 1, 150}}
	if !equalSpans(bl.List, want) {
		t.Fatalf("after the first fill again spans = %+v; want %+v", bl.List, want)
	}
	ps := bl.Pieces(pool.Window{Off: 90, Len: 65})
	wantP := []Piece{{pool.Window{Off: 90, Len: 10}, 1, 0, true}, {pool.Window{Off: 100, Len: 50}, 0, 0, false}, {pool.Window{Off: 150, Len: 5}, 1, 150, true}}
	if len(ps) != len(wantP) {
		t.Fatalf("pieces = %+v; want %+v", ps, wantP)
	}
	for i := range ps {
		if ps[i] != wantP[i] {
			t.Fatalf("pieces = %+v; want %+v", ps, wantP)
		}
	}
}

func equalSpans(a, b []Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package load

import "testing"

// TestHostChunks: a lazily pinned host span is copied in parts that each
// lie in one host page (so in one registration), back to back, covering
// it: spans that start and end mid-page, on a page, and within one.
func TestHostChunks(t *testing.T) {
	for _, tc := range []struct{ off, n, parts int }{
		{0, 4096, 1}, {0, 16384, 4}, {100, 8448, 3}, {4095, 2, 2}, {8192, 1, 1}, {5000, 100, 1}, {12288, 8448, 3},
	} {
		got := hostChunks(tc.off, tc.n)
		if len(got) != tc.parts {
			t.Errorf("hostChunks(%d, %d) = %v: %d parts, want %d", tc.off, tc.n, got, len(got), tc.parts)
		}
		at := 0
		for _, c := range got {
			lo, hi := tc.off+c[0], tc.off+c[0]+c[1]
			if c[0] != at || c[1] <= 0 || lo/hostPage != (hi-1)/hostPage {
				t.Fatalf("hostChunks(%d, %d) = %v: part %v is not next, or crosses a host page", tc.off, tc.n, got, c)
			}
			at += c[1]
		}
		if at != tc.n {
			t.Errorf("hostChunks(%d, %d) covers %d bytes", tc.off, tc.n, at)
		}
	}
}

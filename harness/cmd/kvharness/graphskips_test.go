package main

import (
	"strings"
	"testing"
)

// TestGraphSkipsSaySo: the subjects a --graph run passes over are named,
// a line per plugin and kernel with their count and the run that checks
// them, in the order met.
func TestGraphSkipsSaySo(t *testing.T) {
	var g graphSkips
	var b strings.Builder
	g.write(&b)
	if b.Len() != 0 {
		t.Fatalf("nothing passed over, yet: %q", b.String())
	}
	for range 3 {
		g.add("layerload", "load")
	}
	g.add("fusedstore", "read")
	g.add("fusedstore", "read")
	g.write(&b)
	want := "(layerload's 3 load subjects not run: --graph replays stores only; run mutants --plugin layerload without --graph for them)\n" +
		"(fusedstore's 2 read subjects not run: --graph replays stores only; run mutants --plugin fusedstore without --graph for them)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// Package kindtest holds what the kernel kinds' tests share beyond
// starting plugins (package plugintest): fixtures every kind builds the
// same way, which the tests of the plugin runner and the command line
// build too. It imports the kit only, never a kind.
package kindtest

import (
	"testing"

	"github.com/kvharness/kvharness/harness/layout"
)

// Layout is built-in layout name at head dimension headDim (0: the
// layout's fixed one, else the default) and page size pageSize; a name
// that is not a built-in fails the test, since every later step would.
func Layout(t testing.TB, name string, headDim, pageSize int) *layout.Layout {
	t.Helper()
	l, err := layout.Builtin(name, headDim, pageSize)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Layouts is Layout of each name, in order; nil for none.
func Layouts(t testing.TB, headDim, pageSize int, names ...string) []*layout.Layout {
	t.Helper()
	var out []*layout.Layout
	for _, n := range names {
		out = append(out, Layout(t, n, headDim, pageSize))
	}
	return out
}

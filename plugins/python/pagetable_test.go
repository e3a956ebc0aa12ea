package python

import (
	"cmp"
	"context"
	"path/filepath"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
)

// TestPageTableAppend: the page-table example, a real plugin process,
// passes the store properties under page-table addressing on FlashInfer's
// NHD and HND caches, and its last-page-overrun variant is caught (in the
// full suite).
func TestPageTableAppend(t *testing.T) {
	slowPython(t)
	dir := runDir(t)
	var layouts []*layout.Layout
	for _, name := range []string{"flashinfer-nhd", "flashinfer-hnd"} {
		l, err := layout.BuiltinDims(name, layout.Dims{Heads: 3, HeadDim: 64, PageSize: 16})
		noErr(t, err)
		layouts = append(layouts, l)
	}
	for _, tc := range []struct {
		variant string
		pass    bool
	}{{"", true}, {"last-page-overrun", false}} {
		t.Run(cmp.Or(tc.variant, "control"), func(t *testing.T) {
			if !tc.pass {
				pythonMutant(t, "harness/kernels/store's TestPageTableStores (page-table-last-overrun)")
			}
			p := start(t, dir, filepath.Join("pagetableappend", "kvharness-plugin.json"), tc.variant)
			s := store.Suite(&kind.Session{Plugin: p, Dir: dir}, kind.Params{Variant: tc.variant, Layouts: layouts, Cases: rowCases(40, 15), Seed: 1,
				Setup: kind.Setup{Slots: 4096, MaxCapacity: 48, Backend: arena.SHM{}}, StopAtFirst: !tc.pass}, []store.Padding{store.PadTable})
			vs, err := s.Run(context.Background())
			noErr(t, err)
			wantVerdicts(t, tc.variant, tc.pass, vs)
		})
	}
}

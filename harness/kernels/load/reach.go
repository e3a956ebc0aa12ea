package load

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pool"
)

// Far pools. A loader that computes page × page bytes in 32 bits copies
// the wrong bytes only where that product passes 2^31 (or, unsigned,
// 2^32): in the host pools of real deployments, many gigabytes, and in
// no pool of eight pages. So a check's edges row runs over pools whose
// largest buffer reaches past 4 GiB of byte offsets (Far), and its cases
// name only the pools' live pages (LivePages): the first ones, the ones
// that straddle 2 GiB and 4 GiB of each buffer's pool, the last ones.
//
// Such an arena costs what its live pages hold. On the host, both
// regions are sparse files: every pool is filled lazily and only its
// live pages are materialized, once, when the target opens; a copy into
// any other page allocates a hole, which the capture's scan reports as a
// stray write wherever in the gigabytes it lands. On a GPU the device
// region is a virtual reservation of which only the live pages, the
// guards' and staging are backed (a copy anywhere else faults), and the
// SDK pins only the host pages a copy touches. Staging holds the pages of
// one case (at most MaxPages), never the pool's.

// Far geometry bounds: the pages a far pool may have, and its bytes.
const (
	MaxFarPages    = 1 << 28
	maxFarPoolSize = 1 << 33
)

// edgePages is how many pages at each end of a far pool are live.
const edgePages = 2

// IsFar reports whether g's pools are far: more pages than a dense
// case's (MaxPages), filled lazily, their cases naming live pages only.
func (g Geometry) IsFar() bool { return g.Pages > MaxPages }

// FarPages is how many pages g's pools need for its largest buffer's
// pool to reach pool.FarBytes; 0 when a layout does not build.
func (g Geometry) FarPages() int {
	most := 0
	for i := range g.Buffers {
		l, err := g.Layout(i)
		if err != nil {
			return 0
		}
		most = max(most, l.PageBytes())
	}
	if most == 0 {
		return 0
	}
	return (pool.FarBytes + most - 1) / most
}

// Far is g with pools of FarPages pages; g when they would be no larger.
func (g Geometry) Far() Geometry {
	pages := g.FarPages()
	if pages <= g.Pages {
		return g
	}
	x := g
	x.Buffers = slices.Clone(g.Buffers)
	x.Pages = pages
	return x
}

// LivePages are the pages cases of a far geometry name, sorted, each
// once: the first and last edgePages, and in each buffer's pool the
// pages holding the bytes at 2^31 and 2^32 and the byte before each (a
// 32-bit offset wraps on the first of them). Nil for a dense geometry:
// every page is live.
func (g Geometry) LivePages() []int {
	if !g.IsFar() {
		return nil
	}
	var out []int
	for p := range edgePages {
		out = append(out, p, g.Pages-1-p)
	}
	for i := range g.Buffers {
		l, err := g.Layout(i)
		if err != nil {
			continue
		}
		pb := int64(l.PageBytes())
		for _, edge := range []int64{1 << 31, 1 << 32} {
			for _, p := range []int64{(edge - 1) / pb, edge / pb} {
				if p < int64(g.Pages) {
					out = append(out, int(p))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CasePages is the most pages a case over g moves: what staging holds
// room for. A far geometry's cases name live pages only, each once.
func (g Geometry) CasePages() int {
	if live := g.LivePages(); live != nil {
		return min(len(live), MaxPages)
	}
	return min(g.Pages, MaxPages)
}

// EdgePages are the live pages past 2 GiB of some buffer's pool: the
// ones a 32-bit offset gets wrong.
func (g Geometry) EdgePages() []int {
	var out []int
	for _, p := range g.LivePages() {
		for i := range g.Buffers {
			l, err := g.Layout(i)
			if err == nil && int64(p+1)*int64(l.PageBytes()) > 1<<31 {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// liveWindows are the windows of region r (a pool of a geometry buffer
// of pb-byte pages) its live pages occupy, and its guards: what a far
// arena holds of it.
func liveWindows(r pool.Region, pb int, live []int) []pool.Window {
	ws := []pool.Window{r.GuardBefore, r.GuardAfter}
	for _, p := range live {
		ws = append(ws, pool.Window{Off: r.Pool.Off + p*pb, Len: pb})
	}
	slices.SortFunc(ws, func(a, b pool.Window) int { return a.Off - b.Off })
	return ws
}

// Reaches says why a check's edges row cannot run over far pools, or ""
// when it can: the check's default (p.Far: no --slots), in a run
// directory on tmpfs (both regions are sparse files on the host; the
// host pools are on a GPU too), on a GPU only for a plugin that maps
// sparse CUDA arenas.
func Reaches(p kind.Params, s *kind.Session) string {
	var st unix.Statfs_t
	switch {
	case !p.Far:
		return "--slots pins the pools"
	case s.Dir == nil || unix.Statfs(s.Dir.Path, &st) != nil || st.Type != unix.TMPFS_MAGIC:
		return "the run directory is not on tmpfs, where a sparse pool costs only its live pages"
	case p.Place().OnDevice() && (s.Desc == nil ||
		!arena.Sparse(p.Backend, arena.Options{FDArenas: s.Desc.CUDAFDArenas, SparseArenas: s.Desc.CUDASparseArenas})):
		return "the plugin maps no sparse CUDA arenas (cuda_sparse_arenas)"
	}
	return ""
}

// FarLine is the coverage line of a check on why (Reaches's answer):
// how far the edges row reached, or why it did not; "" when the flags
// pinned the pools.
func FarLine(p kind.Params, why string) string {
	switch {
	case why == "" && p.Place().OnDevice():
		return "reach: the edges row's pools pass 4 GiB of byte offsets (sparse: a virtual reservation on the GPU, host pages pinned as copies touch them), its pages drawn at 2 GiB and 4 GiB too"
	case why == "":
		return "reach: the edges row's pools pass 4 GiB of byte offsets (sparse), its pages drawn at 2 GiB and 4 GiB too"
	case p.Far:
		return "reach: the edges row's pools stay under 2 GiB of byte offsets: " + why
	}
	return ""
}

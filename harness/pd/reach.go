package pd

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/pool"
)

// Far pools. An engine that computes page × item_len in 32 bits copies
// the wrong bytes only where that product passes 2^31 (or, unsigned,
// 2^32): in the pools of real deployments, many gigabytes, and in no pool
// of a few hundred pages. So a check's edges row (transfer's, pdasync's)
// runs over pools whose largest buffer reaches past 4 GiB of byte offsets
// (FarPages), and draws pages at those edges (EdgePages). Such an arena
// is sparse (Sparse): its pages are holes until a case names them, and a
// copy into a hole still shows.

// FarPages is how many pages g's pools need for its largest buffer's pool
// to reach pool.FarBytes; 0 when a layout does not build.
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

// Far is g with pools of FarPages pages, each buffer's page-table shift
// kept in proportion to the pool (a quarter of it and one, as the
// default geometry has); g when no layout builds.
func (g Geometry) Far() Geometry {
	pages := g.FarPages()
	if pages <= g.Pages {
		return g
	}
	x := g.Clone()
	for i, b := range x.Buffers {
		if b.Shift != 0 {
			x.Buffers[i].Shift = int(int64(b.Shift) * int64(pages) / int64(g.Pages))
		}
	}
	x.Pages = pages
	return x
}

// Sparse reports whether a pool of g passes pool.DenseMax bytes: its
// arena is filled lazily, and only the pages a case names are written.
func (g Geometry) Sparse() bool {
	for i := range g.Buffers {
		l, err := g.Layout(i)
		if err == nil && int64(l.PageBytes())*int64(g.Pages) > pool.DenseMax {
			return true
		}
	}
	return false
}

// EdgePages are the logical pages whose physical page, in some buffer's
// pool, holds the byte at offset 2^31 or 2^32 from the pool's base, or
// the byte before it: a 32-bit offset wraps on the first of them. Sorted,
// each once; none in a pool that stops short of 2 GiB.
func (g Geometry) EdgePages() []int64 {
	var out []int64
	for i, b := range g.Buffers {
		l, err := g.Layout(i)
		if err != nil {
			continue
		}
		pb := int64(l.PageBytes())
		for _, edge := range []int64{1 << 31, 1 << 32} {
			for _, phys := range []int64{(edge - 1) / pb, edge / pb} {
				if phys < int64(g.Pages) {
					out = append(out, (phys-int64(b.Shift)%int64(g.Pages)+int64(g.Pages))%int64(g.Pages))
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Reaches reports whether a check's edges row runs over far pools: the
// check's default (p.Far: no --slots), in a run directory on tmpfs, whose
// arenas are sparse files. A GPU's pd arenas are backed whole, so on a
// GPU far pools live in host shared memory (FarLine says so).
func Reaches(p kind.Params, s *kind.Session) bool {
	var st unix.Statfs_t
	return p.Far && s.Dir != nil && unix.Statfs(s.Dir.Path, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// FarLine is the coverage line of a check whose edges row reaches far,
// on a GPU (onDevice) or not.
func FarLine(onDevice bool) string {
	where := "sparse"
	if onDevice {
		where = "sparse, in host shared memory"
	}
	return "reach: the edges row's pools pass 4 GiB of byte offsets (" + where + "), its pages drawn at 2 GiB and 4 GiB too"
}

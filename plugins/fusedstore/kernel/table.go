package kernel

import (
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/enginestore"
)

// storeTable stores a call addressed by page table as FlashInfer's
// append_paged_kv_cache does: row i appends to request b = batch_indices[i]
// at position pos = positions[i], into page kv_indices[kv_indptr[b] +
// pos / P] at entry pos % P; a row whose position is not below its
// request's length, (pages - 1) * P + kv_last_page_len[b], is padding and
// is skipped. page-table-last-overrun bounds the request one entry long.
func storeTable(c *store.Call) error {
	l, t := c.Pool.Layout, c.Table
	p := int64(t.PageSize)
	_, engine := enginestore.BytesPerToken(l.Name, l.Heads, l.HeadDim)
	d := enginestore.Dims{Heads: l.Heads, HeadDim: l.HeadDim, PageSize: l.PageSize, Pages: c.Pool.Pages()}
	var g cpustore.Geometry
	if !engine {
		var err error
		if g, _, err = geometry(c.Variant, l.Name, l.HeadDim, l.PageSize); err != nil {
			return err
		}
	}
	for i := range c.Capacity {
		b, pos := t.BatchIndices[i], int64(t.Positions[i])
		first, pages := int64(t.Indptr[b]), int64(t.Indptr[b+1]-t.Indptr[b])
		length := int64(0)
		if pages > 0 {
			length = (pages-1)*p + int64(t.LastPageLen[b])
			if c.Variant == "page-table-last-overrun" {
				length++
			}
		}
		if pos < 0 || pos >= length {
			continue
		}
		slot := int64(t.Indices[first+pos/p])*p + pos%p
		row := c.Rows[i*c.RowElems : (i+1)*c.RowElems]
		if engine {
			if err := enginestore.Store(l.Name, d, c.Arena, c.Pool.Base, slot, row, c.Scales, engineBugs(c.Variant)); err != nil {
				return err
			}
			continue
		}
		value, scale := g.Offsets(slot)
		if l.Name == "bf16" {
			cpustore.PutBF16(c.Arena, c.Pool.Base+value, row)
		} else {
			cpustore.Exact.PutFP8(c.Arena, c.Pool.Base+value, c.Pool.Base+scale, row)
		}
	}
	return nil
}

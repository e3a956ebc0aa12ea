package load

import (
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
)

// Bounds that keep a hand-edited or hostile case from asking for an
// absurd arena.
const (
	MaxLayers  = 16
	MaxPages   = 64
	MaxBuffers = 8
)

// Buffer is one buffer of every layer: its name and layout. The ordering
// properties treat a page's bytes as opaque; the layout gives its size,
// which differs from buffer to buffer, so that a copy of another buffer's
// page or of the wrong length shows.
type Buffer struct {
	Name    string `json:"name"`
	Layout  string `json:"layout"`
	HeadDim int    `json:"head_dim"`
}

// Geometry is the memory a case runs on: Layers layers of Buffers, each
// with a host pool and a device pool of Pages pages of PageSize tokens.
type Geometry struct {
	Layers   int      `json:"layers"`
	Pages    int      `json:"pages"`
	PageSize int      `json:"page_size"`
	Buffers  []Buffer `json:"buffers"`
}

// The buffers a DeepSeek-V4 layer loads: its KV (bf16 here, 256 B a
// token), its index-K cache (SGLang's fp8-paged indexer layout: a page of
// e4m3 codes, then the page's float32 scales) and a small per-token
// scales buffer (32 B a token).
const (
	BufferKV     = "kv"
	BufferIndexK = "indexk"
	BufferScales = "scales"
)

// DefaultGeometry is layers DeepSeek-V4-like layers of kv, indexk and
// scales, pages pages per pool, of pageSize tokens.
func DefaultGeometry(layers, pages, pageSize int) Geometry {
	return Geometry{Layers: layers, Pages: pages, PageSize: pageSize, Buffers: []Buffer{
		{Name: BufferKV, Layout: "bf16", HeadDim: layout.DefaultHeadDim},
		{Name: BufferIndexK, Layout: "fp8-paged", HeadDim: layout.DefaultHeadDim},
		{Name: BufferScales, Layout: "bf16", HeadDim: 16},
	}}
}

// Validate checks the bounds and every buffer's layout.
func (g Geometry) Validate() error {
	switch {
	case g.Layers < 1 || g.Layers > MaxLayers:
		return fmt.Errorf("%d layers: want 1..%d", g.Layers, MaxLayers)
	case g.Pages < 1 || g.Pages > MaxFarPages:
		return fmt.Errorf("%d pages per pool: want 1..%d (far pools past %d)", g.Pages, MaxFarPages, MaxPages)
	case g.PageSize < 1 || g.PageSize > 1<<12:
		return fmt.Errorf("page size %d: want 1..4096 tokens", g.PageSize)
	case len(g.Buffers) < 1 || len(g.Buffers) > MaxBuffers:
		return fmt.Errorf("%d buffers: want 1..%d", len(g.Buffers), MaxBuffers)
	}
	seen := map[string]bool{}
	for i := range g.Buffers {
		if _, err := g.Layout(i); err != nil {
			return err
		}
		if n := g.Buffers[i].Name; n == "" || seen[n] || strings.ContainsAny(n, "/ ") {
			return fmt.Errorf("buffer %d: name %q: want a unique name without spaces or slashes", i, n)
		}
		seen[g.Buffers[i].Name] = true
		if l, _ := g.Layout(i); g.IsFar() && int64(l.PageBytes())*int64(g.Pages) > maxFarPoolSize {
			return fmt.Errorf("buffer %s: %d pages of %d bytes: a far pool holds at most %d GiB", g.Buffers[i].Name, g.Pages, l.PageBytes(), maxFarPoolSize>>30)
		}
	}
	return nil
}

// Layout builds buffer i's layout.
func (g Geometry) Layout(i int) (*layout.Layout, error) {
	b := g.Buffers[i]
	return layout.BufferBuiltin(b.Name, b.Layout, b.HeadDim, g.PageSize)
}

// PoolTokens is the tokens of one pool: the slots a repro file of a case
// over g names.
func (g Geometry) PoolTokens() int { return g.Pages * g.PageSize }

// Index is the position of the buffer called name, or -1.
func (g Geometry) Index(name string) int {
	for i, b := range g.Buffers {
		if b.Name == name {
			return i
		}
	}
	return -1
}

// Key identifies the geometry: targets are kept by it.
func (g Geometry) Key() string { return g.String() }

// String is a one-line summary: "4 layers × kv, indexk, scales; 8 pages of 64 tokens".
func (g Geometry) String() string {
	names := make([]string, len(g.Buffers))
	for i, b := range g.Buffers {
		names[i] = fmt.Sprintf("%s (%s D=%d)", b.Name, b.Layout, b.HeadDim)
	}
	return fmt.Sprintf("%d layers × %s; %d pages of %d tokens per pool", g.Layers, strings.Join(names, ", "), g.Pages, g.PageSize)
}

// Reshaped is g at another head dim and page size: the buffers that take
// the flags' head dim (all but the scales) take headDim, the pools keep
// their page count.
func (g Geometry) Reshaped(headDim, pageSize int) Geometry {
	out := g
	out.PageSize = pageSize
	out.Buffers = append([]Buffer(nil), g.Buffers...)
	for i := range out.Buffers {
		if out.Buffers[i].Name != BufferScales && layout.FixedHeadDim(out.Buffers[i].Layout) == 0 {
			out.Buffers[i].HeadDim = headDim
		}
	}
	return out
}

// Outline is g without its page size: what a run whose rows draw their
// shapes says of its geometry.
func (g Geometry) Outline() string {
	return fmt.Sprintf("%d layers of %d buffers, %d pages a pool", g.Layers, len(g.Buffers), g.Pages)
}

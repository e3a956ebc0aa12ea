package pd

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
)

// The two sides of a transfer: the prefill server's pools, which are read,
// and the decode server's, which are written.
const (
	SideSrc = "src"
	SideDst = "dst"
)

// Bounds that keep a hand-edited or hostile transfer case from asking for
// an absurd arena or an oracle run that never ends.
// Pages are bounded loosely (a far pool of 16-byte pages takes 2^28 of
// them: see FarPages) and a pool's bytes tightly.
const (
	MaxTransferBuffers = 64
	MaxTransferPages   = 1 << 29
	MaxTransferRooms   = 4096
	MaxPoolBytes       = 1 << 33
)

// Buffer is one buffer of a multi-buffer KV cache (a layer's KV, its
// index-K, a compressor state), present on both sides with the same
// geometry.
//
// Alloc and Shift model the two facts real transfer bugs got wrong:
//
//   - Alloc names the allocation the buffer is carved from. Buffers with the
//     same allocation key share one registered base address, as a tensor
//     shared by two layer groups does in vLLM (#57661): an engine that
//     deduplicates memory regions by base address collapses them. A buffer
//     with an empty Alloc owns the allocation keyed by its own name.
//   - Shift is the buffer's page table: a room's page p lives in physical
//     page (p + Shift) mod Pages of this buffer. Buffers with different
//     shifts have different page tables, as DeepSeek-V4's state and indexer
//     buffers do (tokenspeed #660 applied one buffer's pages to all).
type Buffer struct {
	Name    string `json:"name"`
	Layer   int    `json:"layer"`
	Layout  string `json:"layout"`
	HeadDim int    `json:"head_dim"`
	Alloc   string `json:"alloc,omitempty"`
	Shift   int    `json:"shift,omitempty"`
}

// AllocKey is the allocation the buffer belongs to.
func (b Buffer) AllocKey() string {
	if b.Alloc != "" {
		return b.Alloc
	}
	return b.Name
}

// Phys maps a room's (logical) page to this buffer's physical page in a
// pool of pages pages.
func (b Buffer) Phys(page int64, pages int) int64 {
	return (page + int64(b.Shift)) % int64(pages)
}

// Pool is the spec of the buffer's pool on a side, of slots slots of
// layout l: named side/name for messages, and carrying the buffer's
// allocation and page table, which the plugin reads from the attach.
func (b Buffer) Pool(side string, l *layout.Layout, slots int) pool.Spec {
	return pool.Spec{Name: side + "/" + b.Name, Layout: l, Slots: slots,
		Buffer: &pool.Buffer{Side: side, Layer: b.Layer, Name: b.Name, Alloc: b.Alloc, Shift: b.Shift}}
}

// Geometry is the memory a transfer runs on: every buffer has
// Pages pages of PageSize tokens on each side.
type Geometry struct {
	PageSize int      `json:"page_size"`
	Pages    int      `json:"pages"`
	Buffers  []Buffer `json:"buffers"`
}

// DefaultGeometry is a DeepSeek-V4-like cache with layers layers of
// three buffers each: the layer's KV (bf16, 256 B/token), a compressor
// state carved from the KV's allocation (fp8 rows, 132 B/token), and the
// index-K cache (fp8-paged, 132 B/token) on its own page table.
func DefaultGeometry(layers, pages int) Geometry {
	g := Geometry{PageSize: layout.DefaultPageSize, Pages: pages}
	d := layout.DefaultHeadDim
	for l := range layers {
		kv := fmt.Sprintf("L%d.kv", l)
		g.Buffers = append(g.Buffers,
			Buffer{Name: kv, Layer: l, Layout: "bf16", HeadDim: d},
			Buffer{Name: fmt.Sprintf("L%d.state", l), Layer: l, Layout: "fp8-rows", HeadDim: d, Alloc: kv},
			Buffer{Name: fmt.Sprintf("L%d.indexk", l), Layer: l, Layout: "fp8-paged", HeadDim: d, Shift: pages/4 + 1})
	}
	return g
}

// SizedGeometry is DefaultGeometry(layers, pages) in pages of pageSize
// tokens, every buffer at head dimension headDim, validated: the geometry
// a check run's flags ask of a pd kind. Errors name the kernel.
func SizedGeometry(kernel protocol.Kernel, layers, pages, pageSize, headDim int) (Geometry, error) {
	g := DefaultGeometry(layers, pages)
	g.PageSize = pageSize
	for i := range g.Buffers {
		g.Buffers[i].HeadDim = headDim
	}
	if err := g.Validate(); err != nil {
		return g, fmt.Errorf("%s geometry: %w", kernel, err)
	}
	return g, nil
}

// SuiteGeometry is the geometry a pd kind's suite draws over, g or, when
// g has no buffers, DefaultGeometry(layers, pages), and the layout of its
// first buffer, which names every row of the suite.
func SuiteGeometry(g Geometry, layers, pages int) (Geometry, *layout.Layout, error) {
	if len(g.Buffers) == 0 {
		g = DefaultGeometry(layers, pages)
	}
	l, err := g.Layout(0)
	return g, l, err
}

// Layout builds buffer i's layout.
func (g Geometry) Layout(i int) (*layout.Layout, error) {
	b := g.Buffers[i]
	return layout.BufferBuiltin(b.Name, b.Layout, b.HeadDim, g.PageSize)
}

// PoolTokens is the tokens of one pool: the slots a repro file of a case
// over g names.
func (g Geometry) PoolTokens() int { return g.Pages * g.PageSize }

// Layers lists the distinct layers of the buffers, in order of appearance.
func (g Geometry) Layers() []int {
	var out []int
	seen := map[int]bool{}
	for _, b := range g.Buffers {
		if !seen[b.Layer] {
			seen[b.Layer] = true
			out = append(out, b.Layer)
		}
	}
	return out
}

// Key identifies a geometry: two geometries with the same key plan the
// same arena.
func (g Geometry) Key() string {
	b, _ := json.Marshal(g)
	return string(b)
}

// Clone returns a deep copy.
func (g Geometry) Clone() Geometry {
	g.Buffers = append([]Buffer(nil), g.Buffers...)
	return g
}

// Validate checks the geometry: sizes in range, buffer names unique and
// free of the characters the pool-name grammar uses, layouts that build,
// shifts that are page numbers.
func (g Geometry) Validate() error {
	switch {
	case g.PageSize < 1 || g.PageSize > 4096:
		return fmt.Errorf("page size %d: want 1..4096", g.PageSize)
	case g.Pages < 1 || g.Pages > MaxTransferPages:
		return fmt.Errorf("%d pages: want 1..%d", g.Pages, MaxTransferPages)
	case len(g.Buffers) < 1 || len(g.Buffers) > MaxTransferBuffers:
		return fmt.Errorf("%d buffers: want 1..%d", len(g.Buffers), MaxTransferBuffers)
	}
	names := map[string]bool{}
	for i, b := range g.Buffers {
		if err := g.validBuffer(i, names); err != nil {
			return err
		}
		names[b.Name] = true
	}
	return nil
}

func (g Geometry) validBuffer(i int, names map[string]bool) error {
	b := g.Buffers[i]
	switch {
	case b.Name == "" || strings.ContainsAny(b.Name, "/;= \t\n"):
		return fmt.Errorf("buffer %d: name %q must be non-empty without '/', ';', '=' or spaces", i, b.Name)
	case names[b.Name]:
		return fmt.Errorf("buffer %d: name %q used twice", i, b.Name)
	case strings.ContainsAny(b.Alloc, "/;= \t\n"):
		return fmt.Errorf("buffer %s: alloc %q must not contain '/', ';', '=' or spaces", b.Name, b.Alloc)
	case b.Shift < 0 || b.Shift >= g.Pages:
		return fmt.Errorf("buffer %s: shift %d outside 0..%d", b.Name, b.Shift, g.Pages-1)
	}
	l, err := g.Layout(i)
	if err == nil && int64(l.PageBytes())*int64(g.Pages) > MaxPoolBytes {
		return fmt.Errorf("buffer %s: %d pages of %d bytes pass %d GiB a pool", b.Name, g.Pages, l.PageBytes(), MaxPoolBytes>>30)
	}
	return err
}

// String is a one-line summary, e.g. "40×64-token pages, 6 buffers in 2 layers".
func (g Geometry) String() string {
	return fmt.Sprintf("%d×%d-token pages, %d buffers in %d layers", g.Pages, g.PageSize, len(g.Buffers), len(g.Layers()))
}

// Reshaped is g at another head dim and page size: every buffer takes
// headDim (one whose layout fixes its head dim keeps it), the pools keep
// their page count.
func (g Geometry) Reshaped(headDim, pageSize int) Geometry {
	g = g.Clone()
	g.PageSize = pageSize
	for i := range g.Buffers {
		if layout.FixedHeadDim(g.Buffers[i].Layout) == 0 {
			g.Buffers[i].HeadDim = headDim
		}
	}
	return g
}

// Layouts are the layouts of g's buffers, each once, in order.
func (g Geometry) Layouts() ([]*layout.Layout, error) {
	var out []*layout.Layout
	seen := map[string]bool{}
	for i, b := range g.Buffers {
		if seen[b.Layout] {
			continue
		}
		seen[b.Layout] = true
		l, err := g.Layout(i)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// Outline is g without its page size: what a run whose rows draw their
// shapes says of its geometry.
func (g Geometry) Outline() string {
	return fmt.Sprintf("%d pages a pool, %d buffers in %d layers", g.Pages, len(g.Buffers), len(g.Layers()))
}

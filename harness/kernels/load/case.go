package load

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Op is what a case exercises.
type Op string

// The ops.
const (
	// OpLoad: the plugin loads the case's pages of every layer and buffer
	// from the host pool into the device pools; the consumer gates and
	// reads each layer's buffers in order.
	OpLoad Op = "load"
	// OpStore: for each layer the caller writes inputs, the plugin stores
	// them into the device pools on a stream of its own for the caller's
	// stream, and the caller reads the pages.
	OpStore Op = "store"
)

// MaxFirstLayer bounds a case's global layer id of its first layer.
const MaxFirstLayer = 1 << 10

// Page is one page of a case, the same in every layer and buffer (a
// request's page table): source page Src (the host pool's, or a store's
// input) goes to device page Dst.
type Page struct {
	Src int `json:"src"`
	Dst int `json:"dst"`
}

// Item is one copy of a case: a layer, a buffer (by name) and a page (an
// index into the case's pages).
type Item struct {
	Layer  int    `json:"layer"`
	Buffer string `json:"buffer"`
	Page   int    `json:"page"`
}

func (it Item) String() string { return fmt.Sprintf("L%d/%s page %d", it.Layer, it.Buffer, it.Page) }

// Case is one ordering case: an op over some layers, buffers and pages,
// and its schedule: which copies are late (held behind the harness's
// latch, with whatever follows them on their stream, until the consumer
// is queued), which fail, which destination pages a reader still holds.
type Case struct {
	Geometry   Geometry `json:"geometry"`
	Op         Op       `json:"op"`
	Layers     int      `json:"layers"`
	FirstLayer int      `json:"first_layer,omitempty"`
	Buffers    []string `json:"buffers"` // loaded, in the geometry's order
	Order      []string `json:"order"`   // the consumer's reading order of Buffers
	Pages      []Page   `json:"pages"`
	Late       []Item   `json:"late,omitempty"`
	LateInputs []Item   `json:"late_inputs,omitempty"` // stores: the caller's input writes held
	Fail       []Item   `json:"fail,omitempty"`        // loads: copies whose host page cannot be read
	Readers    []int    `json:"readers,omitempty"`     // pages whose destination a reader still holds
	// NoLatch runs the case with no latch: timing alone decides what the
	// consumer sees, and only the happens-before checker is sure to see a
	// missing edge.
	NoLatch bool `json:"no_latch,omitempty"`
}

// Clone returns a deep copy.
func (c *Case) Clone() *Case {
	x := *c
	x.Geometry.Buffers = slices.Clone(c.Geometry.Buffers)
	x.Buffers, x.Order, x.Pages = slices.Clone(c.Buffers), slices.Clone(c.Order), slices.Clone(c.Pages)
	x.Late, x.LateInputs, x.Fail = slices.Clone(c.Late), slices.Clone(c.LateInputs), slices.Clone(c.Fail)
	x.Readers = slices.Clone(c.Readers)
	return &x
}

// Validate checks a case against its geometry, so that a hand-edited or
// corrupt repro file fails with a reason. slots is unused: a load case
// brings its own geometry.
func (c *Case) Validate(int) error {
	if err := c.Geometry.Validate(); err != nil {
		return fmt.Errorf("geometry: %w", err)
	}
	g := c.Geometry
	switch {
	case c.Op != OpLoad && c.Op != OpStore:
		return fmt.Errorf("op %q: want load or store", c.Op)
	case c.Layers < 1 || c.Layers > g.Layers:
		return fmt.Errorf("%d layers: want 1..%d (the geometry's)", c.Layers, g.Layers)
	case c.FirstLayer < 0 || c.FirstLayer > MaxFirstLayer:
		return fmt.Errorf("first layer %d: want 0..%d", c.FirstLayer, MaxFirstLayer)
	case c.Op == OpStore && len(c.Fail) > 0:
		return fmt.Errorf("fail: a store's inputs cannot fail; only a load's copies can")
	case c.Op == OpLoad && len(c.LateInputs) > 0:
		return fmt.Errorf("late_inputs: a load has no caller inputs; use late")
	}
	if err := c.validBuffers(); err != nil {
		return err
	}
	if err := c.validPages(); err != nil {
		return err
	}
	for _, set := range []struct {
		name  string
		items []Item
	}{{"late", c.Late}, {"late_inputs", c.LateInputs}, {"fail", c.Fail}} {
		if err := c.validItems(set.name, set.items); err != nil {
			return err
		}
	}
	return nil
}

func (c *Case) validBuffers() error {
	if len(c.Buffers) == 0 {
		return fmt.Errorf("no buffers: want at least one of the geometry's")
	}
	last := -1
	for _, b := range c.Buffers {
		i := c.Geometry.Index(b)
		if i <= last {
			return fmt.Errorf("buffers %v: want distinct names of the geometry's buffers, in its order", c.Buffers)
		}
		last = i
	}
	if len(c.Order) != len(c.Buffers) {
		return fmt.Errorf("order %v: want each of %v once", c.Order, c.Buffers)
	}
	for _, b := range c.Buffers {
		if !slices.Contains(c.Order, b) {
			return fmt.Errorf("order %v: want each of %v once", c.Order, c.Buffers)
		}
	}
	return nil
}

func (c *Case) validPages() error {
	n := c.Geometry.Pages
	if most := c.Geometry.CasePages(); len(c.Pages) < 1 || len(c.Pages) > most {
		return fmt.Errorf("%d pages: want 1..%d", len(c.Pages), most)
	}
	live := c.Geometry.LivePages()
	src, dst := map[int]bool{}, map[int]bool{}
	for i, p := range c.Pages {
		switch {
		case p.Src < 0 || p.Src >= n || p.Dst < 0 || p.Dst >= n:
			return fmt.Errorf("page %d: %d → %d outside the %d pages of a pool", i, p.Src, p.Dst, n)
		case live != nil && (!slices.Contains(live, p.Src) || !slices.Contains(live, p.Dst)):
			return fmt.Errorf("page %d: %d → %d: a far pool's cases name only its live pages %v", i, p.Src, p.Dst, live)
		case src[p.Src] || dst[p.Dst]:
			return fmt.Errorf("page %d: %d → %d repeats a source or destination page", i, p.Src, p.Dst)
		}
		src[p.Src], dst[p.Dst] = true, true
	}
	seen := map[int]bool{}
	for _, r := range c.Readers {
		if r < 0 || r >= len(c.Pages) || seen[r] {
			return fmt.Errorf("readers %v: want distinct indices into the %d pages", c.Readers, len(c.Pages))
		}
		seen[r] = true
	}
	return nil
}

func (c *Case) validItems(name string, items []Item) error {
	seen := map[Item]bool{}
	for _, it := range items {
		switch {
		case it.Layer < 0 || it.Layer >= c.Layers || !slices.Contains(c.Buffers, it.Buffer) || it.Page < 0 || it.Page >= len(c.Pages):
			return fmt.Errorf("%s %v: outside the case's %d layers, buffers %v and %d pages", name, it, c.Layers, c.Buffers, len(c.Pages))
		case seen[it]:
			return fmt.Errorf("%s %v: listed twice", name, it)
		}
		seen[it] = true
	}
	return nil
}

// buffer is the case's index of buffer name (its position in Buffers).
func (c *Case) buffer(name string) int { return slices.Index(c.Buffers, name) }

// String is a one-line summary, e.g.
// "load 2 layers (first 0) kv,indexk read indexk,kv pages [0→3] late [L1/kv page 0]".
func (c *Case) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d layer%s", c.Op, c.Layers, plural(c.Layers))
	if c.FirstLayer != 0 {
		fmt.Fprintf(&b, " (first global layer %d)", c.FirstLayer)
	}
	fmt.Fprintf(&b, " %s read %s pages [", strings.Join(c.Buffers, ","), strings.Join(c.Order, ","))
	for i, p := range c.Pages {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d→%d", p.Src, p.Dst)
	}
	b.WriteByte(']')
	for _, set := range []struct {
		name  string
		items []Item
	}{{"late", c.Late}, {"late inputs", c.LateInputs}, {"fail", c.Fail}} {
		if len(set.items) > 0 {
			fmt.Fprintf(&b, " %s %v", set.name, set.items)
		}
	}
	if len(c.Readers) > 0 {
		fmt.Fprintf(&b, " readers %v", c.Readers)
	}
	if c.NoLatch {
		b.WriteString(" no latch")
	}
	return b.String()
}

// Describe writes the case in full for a report.
func (c *Case) Describe(w io.Writer, indent string) {
	fmt.Fprintf(w, "%s%v\n", indent, c)
	fmt.Fprintf(w, "%s  geometry: %s\n", indent, c.Geometry)
	if c.Op == OpLoad {
		fmt.Fprintf(w, "%s  the consumer gates then reads, for each layer 0..%d, %s; each page p goes host page src → device page dst\n",
			indent, c.Layers-1, strings.Join(c.Order, " then "))
	} else {
		fmt.Fprintf(w, "%s  for each layer 0..%d the caller writes the inputs, the plugin stores them, the caller reads %s\n",
			indent, c.Layers-1, strings.Join(c.Order, " then "))
	}
	if c.Geometry.IsFar() {
		c.describeOffsets(w, indent)
	}
	if len(c.Late) > 0 {
		fmt.Fprintf(w, "%s  late (held, with what follows on their stream, until the consumer is queued): %v\n", indent, c.Late)
	}
	if len(c.LateInputs) > 0 {
		fmt.Fprintf(w, "%s  late input writes (held on the caller's stream): %v\n", indent, c.LateInputs)
	}
	if len(c.Fail) > 0 {
		fmt.Fprintf(w, "%s  failing copies (host page unreadable): %v\n", indent, c.Fail)
	}
	if len(c.Readers) > 0 {
		fmt.Fprintf(w, "%s  a reader on another stream still holds the destination of pages %v (held behind the latch)\n", indent, c.Readers)
	}
}

// describeOffsets says where a far case's pages lie in bytes, in the
// pools of its buffer of the largest pages: what a 32-bit offset gets
// wrong past 2^31.
func (c *Case) describeOffsets(w io.Writer, indent string) {
	name, pb := "", 0
	for _, b := range c.Buffers {
		if l, err := c.Geometry.Layout(c.Geometry.Index(b)); err == nil && l.PageBytes() > pb {
			name, pb = b, l.PageBytes()
		}
	}
	var parts []string
	for _, p := range c.Pages {
		parts = append(parts, fmt.Sprintf("%d→%d at bytes %s→%s", p.Src, p.Dst, offset(int64(p.Src)*int64(pb)), offset(int64(p.Dst)*int64(pb))))
	}
	fmt.Fprintf(w, "%s  byte offsets in the %s pools (%d-byte pages): %s\n", indent, name, pb, strings.Join(parts, ", "))
}

// offset writes a byte offset, with its place against 2^31 and 2^32.
func offset(n int64) string {
	switch {
	case n >= 1<<32:
		return fmt.Sprintf("%d (2^32+%d)", n, n-1<<32)
	case n >= 1<<31:
		return fmt.Sprintf("%d (2^31+%d)", n, n-1<<31)
	}
	return fmt.Sprint(n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

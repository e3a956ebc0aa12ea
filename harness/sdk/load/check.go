package load

import (
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk"
)

// Bounds on a load request, so that a bad one is an error, not an
// enormous loop.
const (
	maxLoadLayers  = 64
	maxLoadBuffers = 8
	maxLoadPages   = 256
)

// itemKey is a copy of a case: a layer, a buffer and a page index.
type itemKey struct{ layer, buffer, page int }

// loadInput is a checked load request.
type loadInput struct {
	op            kvpb.LoadOp
	layers, first int
	buffers       []Buffer
	pages         []Page
	order         []int
	table         *pageTable
	late, inputs  map[itemKey]bool // late copies; late input writes (stores)
	fail          map[itemKey]bool
	readers       []int
	latch, trace  bool
	probes        []Ref // by layer, order, page
	readerRefs    []Ref // by layer, buffer, reader
	truths        []Ref // stores: by layer, buffer, page
}

// checkLoad validates a load request against the attached pools and
// staging and resolves its pages.
func (s *server) checkLoad(req *kvpb.LoadRequest) (*loadInput, error) {
	in := &loadInput{op: req.Op, layers: int(req.Layers), first: int(req.FirstLayer), latch: req.Latch, trace: req.Trace}
	switch {
	case req.Op != kvpb.LoadOp_LOAD_OP_LOAD && req.Op != kvpb.LoadOp_LOAD_OP_STORE:
		return nil, sdk.BadRequest("load op %v: want LOAD_OP_LOAD or LOAD_OP_STORE", req.Op)
	case in.layers < 1 || in.layers > maxLoadLayers:
		return nil, sdk.BadRequest("%d layers: want 1..%d", in.layers, maxLoadLayers)
	case len(req.Buffers) < 1 || len(req.Buffers) > maxLoadBuffers:
		return nil, sdk.BadRequest("%d buffers: want 1..%d", len(req.Buffers), maxLoadBuffers)
	case len(req.Pages) < 1 || len(req.Pages) > maxLoadPages:
		return nil, sdk.BadRequest("%d pages: want 1..%d", len(req.Pages), maxLoadPages)
	case req.Op == kvpb.LoadOp_LOAD_OP_STORE && len(req.Fail) > 0:
		return nil, sdk.BadRequest("fail: a store's inputs are in staging; only a load's copies can fail")
	}
	for _, p := range req.Pages {
		in.pages = append(in.pages, Page{Src: int(p.Src), Dst: int(p.Dst)})
	}
	if err := s.checkLoadBuffers(req, in); err != nil {
		return nil, err
	}
	if err := checkOrder(req.Order, len(req.Buffers)); err != nil {
		return nil, err
	}
	for _, b := range req.Order {
		in.order = append(in.order, int(b))
	}
	var err error
	if in.late, err = itemSet("late", req.Late, in); err != nil {
		return nil, err
	}
	if in.inputs, err = itemSet("late_inputs", req.LateInputs, in); err != nil {
		return nil, err
	}
	if in.fail, err = itemSet("fail", req.Fail, in); err != nil {
		return nil, err
	}
	for _, r := range req.Readers {
		if int(r) >= len(in.pages) {
			return nil, sdk.BadRequest("reader of page %d: the case has %d pages", r, len(in.pages))
		}
		in.readers = append(in.readers, int(r))
	}
	return in, s.checkLoadStaging(req, in)
}

// checkLoadBuffers reads the buffers: their pools, one per layer, and the
// pages of the case inside them.
func (s *server) checkLoadBuffers(req *kvpb.LoadRequest, in *loadInput) error {
	in.table = &pageTable{srcs: make([][][]Ref, in.layers), dsts: make([][][]Ref, in.layers),
		srcPools: make([][]Ref, in.layers), dstPools: make([][]Ref, in.layers)}
	for l := range in.layers {
		in.table.srcs[l] = make([][]Ref, len(req.Buffers))
		in.table.dsts[l] = make([][]Ref, len(req.Buffers))
		in.table.srcPools[l] = make([]Ref, len(req.Buffers))
		in.table.dstPools[l] = make([]Ref, len(req.Buffers))
	}
	for b, buf := range req.Buffers {
		pb := int(buf.PageBytes)
		if pb < 1 || pb > 1<<24 {
			return sdk.BadRequest("buffer %s: page_bytes %d: want 1..%d", buf.Name, pb, 1<<24)
		}
		in.buffers = append(in.buffers, Buffer{Name: buf.Name, PageBytes: pb})
		if len(buf.DevicePools) != in.layers || (req.Op == kvpb.LoadOp_LOAD_OP_LOAD && len(buf.HostPools) != in.layers) {
			return sdk.BadRequest("buffer %s: %d device and %d host pools for %d layers; want one per layer", buf.Name, len(buf.DevicePools), len(buf.HostPools), in.layers)
		}
		for l := range in.layers {
			base, dsts, err := s.poolPages(buf.Name, buf.DevicePools[l], pb, in.pages, func(p Page) int { return p.Dst })
			if err != nil {
				return err
			}
			in.table.dsts[l][b], in.table.dstPools[l][b] = dsts, base
			if req.Op == kvpb.LoadOp_LOAD_OP_LOAD {
				base, srcs, err := s.poolPages(buf.Name, buf.HostPools[l], pb, in.pages, func(p Page) int { return p.Src })
				if err != nil {
					return err
				}
				in.table.srcs[l][b], in.table.srcPools[l][b] = srcs, base
			}
		}
	}
	return nil
}

// poolPages resolves page numbers of a pool: its base, and each page.
func (s *server) poolPages(name string, index uint32, pageBytes int, pages []Page, which func(Page) int) (Ref, []Ref, error) {
	if int(index) >= len(s.Pools()) {
		return Ref{}, nil, sdk.BadRequest("buffer %s: pool %d: only %d attached", name, index, len(s.Pools()))
	}
	p := s.Pools()[index]
	out := make([]Ref, len(pages))
	for i, pg := range pages {
		n := which(pg)
		if n < 0 || (n+1)*pageBytes > p.Bytes {
			return Ref{}, nil, sdk.BadRequest("buffer %s: page %d of pool %s: the pool holds %d pages of %d bytes", name, n, p.Name, p.Bytes/pageBytes, pageBytes)
		}
		out[i] = Ref{Mem: p.Region, Off: p.Base + n*pageBytes}
	}
	return Ref{Mem: p.Region, Off: p.Base}, out, nil
}

func checkOrder(order []uint32, buffers int) error {
	seen := make([]bool, buffers)
	for _, b := range order {
		if int(b) >= buffers || seen[b] {
			return sdk.BadRequest("order %v: want each of the %d buffers once", order, buffers)
		}
		seen[b] = true
	}
	if len(order) != buffers {
		return sdk.BadRequest("order %v: want each of the %d buffers once", order, buffers)
	}
	return nil
}

func itemSet(field string, items []*kvpb.LoadItem, in *loadInput) (map[itemKey]bool, error) {
	out := map[itemKey]bool{}
	for _, it := range items {
		if int(it.Layer) >= in.layers || int(it.Buffer) >= len(in.buffers) || int(it.Page) >= len(in.pages) {
			return nil, sdk.BadRequest("%s %v: outside %d layers, %d buffers, %d pages", field, it, in.layers, len(in.buffers), len(in.pages))
		}
		out[itemKey{int(it.Layer), int(it.Buffer), int(it.Page)}] = true
	}
	return out, nil
}

// checkLoadStaging reads the offsets of the SDK's own copies: one page of
// their buffer each, inside staging.
func (s *server) checkLoadStaging(req *kvpb.LoadRequest, in *loadInput) error {
	nb, np := len(in.buffers), len(in.pages)
	var err error
	if in.probes, err = s.stagingPages("probe_offsets", req.ProbeOffsets, in.layers*nb*np, func(i int) int {
		return in.buffers[in.order[(i/np)%nb]].PageBytes
	}); err != nil {
		return err
	}
	nr := len(in.readers)
	if in.readerRefs, err = s.stagingPages("reader_offsets", req.ReaderOffsets, in.layers*nb*nr, func(i int) int {
		return in.buffers[(i/nr)%nb].PageBytes
	}); err != nil {
		return err
	}
	if in.op != kvpb.LoadOp_LOAD_OP_STORE {
		return nil
	}
	byPage := func(i int) int { return in.buffers[(i/np)%nb].PageBytes }
	inputs, err := s.stagingPages("input_offsets", req.InputOffsets, in.layers*nb*np, byPage)
	if err != nil {
		return err
	}
	if in.truths, err = s.stagingPages("truth_offsets", req.TruthOffsets, in.layers*nb*np, byPage); err != nil {
		return err
	}
	for l := range in.layers {
		for b := range nb {
			in.table.srcs[l][b] = inputs[(l*nb+b)*np : (l*nb+b+1)*np]
		}
	}
	return nil
}

// stagingPages checks n offsets of pages (bytes(i) long) inside staging.
func (s *server) stagingPages(field string, offs []uint64, n int, bytes func(i int) int) ([]Ref, error) {
	if len(offs) != n {
		return nil, sdk.BadRequest("%s: %d offsets; want %d", field, len(offs), n)
	}
	out := make([]Ref, n)
	for i, off := range offs {
		end := off + uint64(bytes(i))
		if off < uint64(s.Staging().Off) || end > uint64(s.Staging().End()) || end < off {
			return nil, sdk.BadRequest("%s[%d]: [%d,%d) outside staging [%d,%d)", field, i, off, end, s.Staging().Off, s.Staging().End())
		}
		out[i] = Ref{Mem: 0, Off: int(off)}
	}
	return out, nil
}

// schedule is what the SDK's copies check against during a call: which
// pages of the case a copy moves, which are late, which fail. Pages are
// indexed by where they start, so that a load of hundreds of pages costs
// a search per copy, not a scan.
type schedule struct {
	in         *loadInput
	srcs, dsts []placed // sorted by memory, then offset
}

// placed is a page of the case where it lies.
type placed struct {
	at  Ref
	n   int
	key itemKey
}

func newSchedule(in *loadInput) *schedule {
	sc := &schedule{in: in}
	for l := range in.layers {
		for b := range in.buffers {
			for i := range in.pages {
				k := itemKey{l, b, i}
				n := in.buffers[b].PageBytes
				sc.dsts = append(sc.dsts, placed{in.table.dst(l, b, i), n, k})
				if in.table.srcs[l][b] != nil {
					sc.srcs = append(sc.srcs, placed{in.table.src(l, b, i), n, k})
				}
			}
		}
	}
	for _, ps := range [][]placed{sc.srcs, sc.dsts} {
		slices.SortFunc(ps, func(a, b placed) int {
			if a.at.Mem != b.at.Mem {
				return a.at.Mem - b.at.Mem
			}
			return a.at.Off - b.at.Off
		})
	}
	return sc
}

// name is a copy's name in messages and traces: "L1/indexk page 2".
func (sc *schedule) name(it *kvpb.LoadItem) string {
	return fmt.Sprintf("L%d/%s page %d", it.Layer, sc.in.buffers[it.Buffer].Name, it.Page)
}

func item(l, b, i int) *kvpb.LoadItem {
	return &kvpb.LoadItem{Layer: uint32(l), Buffer: uint32(b), Page: uint32(i)}
}

// find returns the first page (by place) of ps that overlaps [r, r+n) and
// that keep accepts. Pages of one memory do not overlap (the attach's
// pools are disjoint), so the candidates are the run that starts before
// r+n and ends after r.
func (sc *schedule) find(r Ref, n int, ps []placed, keep func(itemKey) bool) (*kvpb.LoadItem, bool) {
	i, _ := slices.BinarySearchFunc(ps, r, func(p placed, r Ref) int {
		if p.at.Mem != r.Mem {
			return p.at.Mem - r.Mem
		}
		return p.at.Off + p.n - 1 - r.Off // the first page ending at or after r
	})
	for ; i < len(ps) && ps[i].at.Mem == r.Mem && ps[i].at.Off < r.Off+n; i++ {
		if ps[i].at.Off+ps[i].n > r.Off && keep(ps[i].key) {
			k := ps[i].key
			return item(k.layer, k.buffer, k.page), true
		}
	}
	return nil, false
}

func all(itemKey) bool { return true }

// destination is the first page of the case a copy to dst writes.
func (sc *schedule) destination(dst Ref, n int) (*kvpb.LoadItem, bool) {
	return sc.find(dst, n, sc.dsts, all)
}

// lateAt reports whether a copy to dst writes a late page.
func (sc *schedule) lateAt(dst Ref, n int) bool {
	if !sc.in.latch || len(sc.in.late) == 0 {
		return false
	}
	_, ok := sc.find(dst, n, sc.dsts, func(k itemKey) bool { return sc.in.late[k] })
	return ok
}

// failing is the first failing page a copy from src reads.
func (sc *schedule) failing(src Ref, n int) (*kvpb.LoadItem, bool) {
	if len(sc.in.fail) == 0 || sc.in.op != kvpb.LoadOp_LOAD_OP_LOAD {
		return nil, false
	}
	return sc.find(src, n, sc.srcs, func(k itemKey) bool { return sc.in.fail[k] })
}

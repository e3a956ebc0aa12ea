package load

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// slots are where a case's staging copies go, packed from the start of
// their sections: probes by layer, reading order and page; readers by
// layer, buffer and reader; inputs and truths by layer, buffer and page.
type slots struct {
	probes, readers, inputs, truths []int
}

// geometryBuffer is the geometry's index of the case's buffer cb.
func (c *Case) geometryBuffer(cb int) int { return c.Geometry.Index(c.Buffers[cb]) }

// slots packs the case's staging slots.
func (t *Target) slots(c *Case) slots {
	var s slots
	pack := func(sec int, outer []int, inner int) []int {
		var out []int
		off := t.sections[sec]
		for range c.Layers {
			for _, gb := range outer {
				for range inner {
					out = append(out, off)
					off += t.pageBytes(gb)
				}
			}
		}
		return out
	}
	order, bufs := make([]int, len(c.Order)), make([]int, len(c.Buffers))
	for k, name := range c.Order {
		order[k] = c.Geometry.Index(name)
	}
	for cb := range c.Buffers {
		bufs[cb] = c.geometryBuffer(cb)
	}
	s.probes = pack(secProbe, order, len(c.Pages))
	s.readers = pack(secReader, bufs, len(c.Readers))
	if c.Op == OpStore {
		s.inputs = pack(secInput, bufs, len(c.Pages))
		s.truths = pack(secTruth, bufs, len(c.Pages))
	}
	return s
}

// request is a case's load request on this target.
func (t *Target) request(c *Case, s slots) *kvpb.LoadRequest {
	req := &kvpb.LoadRequest{Layers: uint32(c.Layers), FirstLayer: uint32(c.FirstLayer), Latch: !c.NoLatch, Trace: true}
	if c.Op == OpStore {
		req.Op = kvpb.LoadOp_LOAD_OP_STORE
	}
	for cb := range c.Buffers {
		gb := c.geometryBuffer(cb)
		b := &kvpb.LoadBuffer{Name: c.Buffers[cb], PageBytes: uint64(t.pageBytes(gb))}
		for l := range c.Layers {
			b.DevicePools = append(b.DevicePools, uint32(t.devicePool(l, gb)))
			if c.Op == OpLoad {
				b.HostPools = append(b.HostPools, uint32(t.hostPool(l, gb)))
			}
		}
		req.Buffers = append(req.Buffers, b)
	}
	for _, p := range c.Pages {
		req.Pages = append(req.Pages, &kvpb.LoadPage{Src: uint32(p.Src), Dst: uint32(p.Dst)})
	}
	for _, name := range c.Order {
		req.Order = append(req.Order, uint32(c.buffer(name)))
	}
	req.Late, req.LateInputs, req.Fail = c.items(c.Late), c.items(c.LateInputs), c.items(c.Fail)
	for _, r := range c.Readers {
		req.Readers = append(req.Readers, uint32(r))
	}
	req.ProbeOffsets, req.ReaderOffsets = offsets(s.probes), offsets(s.readers)
	req.InputOffsets, req.TruthOffsets = offsets(s.inputs), offsets(s.truths)
	return req
}

func (c *Case) items(its []Item) []*kvpb.LoadItem {
	var out []*kvpb.LoadItem
	for _, it := range its {
		out = append(out, &kvpb.LoadItem{Layer: uint32(it.Layer), Buffer: uint32(c.buffer(it.Buffer)), Page: uint32(it.Page)})
	}
	return out
}

func offsets(xs []int) []uint64 {
	out := make([]uint64, len(xs))
	for i, x := range xs {
		out[i] = uint64(x)
	}
	return out
}

// Check runs a case and judges it: the bytes every probe and reader saw
// and every pool holds afterwards, the gates' answers, and the log.
func (t *Target) Check(ctx context.Context, c *Case) (*Result, error) {
	if c.Geometry.Key() != t.Geometry.Key() {
		return nil, fmt.Errorf("case geometry %v on a target of %v", c.Geometry, t.Geometry)
	}
	if err := t.Ensure(ctx); err != nil {
		return nil, err
	}
	s := t.slots(c)
	resp, err := Load(ctx, t.Plugin, t.request(c, s))
	if err != nil {
		return nil, err
	}
	ch, err := t.capture()
	if err != nil {
		return nil, err
	}
	res, jerr := t.judge(c, s, resp, ch)
	if rerr := t.reset(ch); jerr == nil {
		jerr = rerr
	}
	return res, jerr
}

// changes are what a case changed: region 0's windows with their bytes,
// region 1's windows, each scanned once.
type changes struct {
	dev  []change
	host []pool.Window
}

// capture scans both regions once.
func (t *Target) capture() (changes, error) {
	span := t.span(regionDevice)
	whole := pool.Region{GuardBefore: pool.Window{Off: span.Off}, Pool: span, GuardAfter: pool.Window{Off: span.End()}}
	d, err := oracle.Capture(t.Arena.Regions[regionDevice].Mem, whole)
	if err != nil {
		return changes{}, err
	}
	host, err := t.Arena.Regions[regionHost].Mem.Changed(t.span(regionHost))
	return changes{dev: deltaWindows(d, span.Off), host: host}, err
}

// reset puts back the background wherever the case changed the arena.
func (t *Target) reset(ch changes) error {
	ws := make([]pool.Window, len(ch.dev))
	for i, w := range ch.dev {
		ws[i] = w.Window
	}
	if err := t.Arena.Regions[regionDevice].Mem.Reset(ws); err != nil {
		return err
	}
	return t.Arena.Regions[regionHost].Mem.Reset(ch.host)
}

// span is the whole of a region's planned bytes: its pools and, in
// region 0, staging.
func (t *Target) span(region int) pool.Window {
	lo, hi := -1, 0
	for _, r := range t.Pools.Regions {
		if r.Mem != region {
			continue
		}
		if lo < 0 || r.Span().Off < lo {
			lo = r.Span().Off
		}
		hi = max(hi, r.Span().End())
	}
	if region == regionDevice {
		hi = max(hi, t.Pools.Staging.End())
	}
	return pool.Window{Off: lo, Len: hi - lo}
}

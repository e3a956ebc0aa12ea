package sequence

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Prefill → decode transfers: a geometry with a decode side has a second
// pool per layer, and a transfer step calls the plugin's transfer kernel
// (the transfer service, transfer.proto) to copy a request's pages, in
// every layer, from its prefill pages to fresh decode pages, as a
// disaggregated engine hands a finished prefill to a decode server. The
// prefill side then releases them (poisoned, as every freed page is). The
// oracle judges the decode pages as it judges every live page: each must
// hold its request's rows, and nothing may land in a decode page that
// was not the transfer's to write.

// transferKind is the transfer service a transfer step calls.
var transferKind = protocol.Kernel("transfer")

// decodeSpecs pairs each layer's pool with a decode-side pool of the same
// layout: the prefill pool the transfer's source, the decode pool its
// destination (the buffer the transfer service pairs them by).
func decodeSpecs(prefill []pool.Spec) []pool.Spec {
	out := make([]pool.Spec, 0, 2*len(prefill))
	for i, s := range prefill {
		s.Buffer = &pool.Buffer{Side: "src", Layer: i, Name: s.Name}
		out = append(out, s)
	}
	for i, s := range prefill {
		s.Name += ".decode"
		s.Buffer = &pool.Buffer{Side: "dst", Layer: i, Name: prefill[i].Name}
		out = append(out, s)
	}
	return out
}

// servesTransfer asks the plugin whether it serves the transfer kind.
func servesTransfer(ctx context.Context, p *plugin.Plugin, variant string, g Geometry) (bool, error) {
	d, err := p.Describe(ctx, plugin.Query{Variant: variant, HeadDim: g.HeadDims[0], PageSize: g.PageSize})
	if err != nil {
		return false, err
	}
	return d.Serves(transferKind), nil
}

// transfer sends the step's room: its prefill pages to its decode pages
// (the decode pool's own page numbers), in every layer. A plugin without
// a transfer kernel has the harness move the pages itself, so a sequence
// with transfers stays one any store can be checked on.
func (t *Target) transfer(ctx context.Context, p *plan) error {
	if !t.transfers {
		return t.movePages(p)
	}
	L := len(t.layouts)
	room := &kvpb.Room{Id: uint64(p.s.Req)}
	for i, pg := range p.src {
		room.SrcPages = append(room.SrcPages, uint64(pg))
		room.DstPages = append(room.DstPages, uint64(p.alloc[i]-t.Geometry.Pages))
	}
	req := &kvpb.TransferRequest{Rooms: []*kvpb.Room{room}}
	for l := range t.layouts {
		req.Buffers = append(req.Buffers, &kvpb.BufferPair{SrcPool: uint32(l), DstPool: uint32(L + l)})
	}
	if _, err := plugin.Call(ctx, t.Plugin, "Transfer", kvpb.NewTransferClient(t.Plugin.Conn()).Transfer, req); err != nil {
		return fmt.Errorf("transfer of r%d: %w", p.s.Req, err)
	}
	return nil
}

// movePages copies the step's pages in every layer, as a correct
// transfer does.
func (t *Target) movePages(p *plan) error {
	for l, lay := range t.layouts {
		buf := make([]byte, lay.PageBytes())
		for i, src := range p.src {
			if err := t.Mem().ReadAt(buf, t.pageAt(l, src)); err != nil {
				return err
			}
			if err := t.Mem().WriteAt(buf, t.pageAt(l, p.alloc[i])); err != nil {
				return err
			}
		}
	}
	return nil
}

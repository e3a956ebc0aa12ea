package plugin

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/proto"

	"github.com/kvharness/kvharness/harness/internal/textsafe"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/protocol/wire"
)

// Query is what a Describe asks: the variant, and the head dimension and
// page size the layouts' geometry is for.
type Query struct {
	Variant           string
	HeadDim, PageSize int
	Heads             int // KV heads per token; 0 means 1
}

// Description is what a plugin says of itself (its Describe answer), in
// the harness's types and made printable: every report, table and message
// prints these names, and none may carry a terminal escape.
type Description struct {
	Name, Version, Doc string
	// Kernels are the kinds the plugin serves, in its order: the first is
	// the kind of a variant that names none.
	Kernels  []protocol.Kernel
	Layouts  []Geometry
	Variants []Variant
	Backends []protocol.Backend
	// CUDAFDArenas: the plugin maps a CUDA arena shared by file descriptor.
	CUDAFDArenas bool
	// CUDASparseArenas: the plugin maps a sparse CUDA arena shared by file
	// descriptor (an arena that comes with pieces).
	CUDASparseArenas bool
	// BenchRotation: Bench takes a rotation's stores in turn.
	BenchRotation bool
	// SlotBits is the slot width the store kernel declares: 64, 32, or 0
	// (64) from a plugin that says nothing; any other value is the
	// plugin's error, reported where it is used.
	SlotBits int
	// Doorbell: StoreBatch answers through a doorbell when an attach asks.
	Doorbell bool
	// PageTable and Slots are how the store kernel takes its calls: by
	// page table, by slot list, or both; a plugin that says nothing takes
	// slot lists.
	PageTable, Slots bool
	// ReadNonFinite is what the read kernel declares it does with ±Inf and
	// NaN in queries and keys (read_non_finite): "" where it declares
	// nothing. A value this harness does not know reads as
	// ReadNonFiniteErr, reported where reads use it.
	ReadNonFinite    layout.NonFinite
	ReadNonFiniteErr error
	// said is the answer as the plugin gave it, made printable: what
	// kvharness plugins --json prints.
	said *kvpb.DescribeResponse
}

// MarshalJSON writes the plugin's answer as the protocol names its fields
// (kvharness plugins --json), escaped as every name here is.
func (d *Description) MarshalJSON() ([]byte, error) {
	if d.said == nil {
		return json.Marshal(&kvpb.DescribeResponse{Name: d.Name, Version: d.Version, Doc: d.Doc})
	}
	return json.Marshal(d.said)
}

// Geometry is what the plugin's code believes about a layout: its bytes
// per token and per page, and its fp8 recipe (nil: the layout's default).
// RecipeErr is why the recipe it sent could not be read (a rule this
// harness does not know), kept for whoever uses the layout.
type Geometry struct {
	Layout        string
	BytesPerToken int
	BytesPerPage  int
	Recipe        *layout.Recipe
	RecipeErr     error
	// PadPolicy is what the kernel leaves in the layout's pad bytes, over
	// the layout's own policy; "" when it declares none.
	PadPolicy layout.PadPolicy `json:",omitempty"`
}

// Variant is a named build of the plugin's kernel: Kernel is the kind it
// changes ("" from a plugin built before the SDKs named it: the first
// kind).
type Variant struct {
	Name, Doc string
	Correct   bool
	Kernel    protocol.Kernel
	// Layouts are where the variant's bug lives (sdk.Variant.Layouts);
	// nil: the run's layouts.
	Layouts []string `json:",omitempty"`
}

// Serves reports whether the plugin serves kind k.
func (d *Description) Serves(k protocol.Kernel) bool {
	for _, x := range d.Kernels {
		if x == k {
			return true
		}
	}
	return false
}

// Describe asks the plugin what it is, once per query for the life of its
// process: a restart asks again.
func (p *Plugin) Describe(ctx context.Context, q Query) (*Description, error) {
	if d, ok := p.described[q]; ok {
		return d, nil
	}
	req := &kvpb.DescribeRequest{Variant: q.Variant, HeadDim: uint32(q.HeadDim), PageSize: uint32(q.PageSize), Heads: uint32(q.Heads)}
	resp, err := Call(ctx, p, "Describe", p.base.Describe, req)
	if err != nil {
		return nil, err
	}
	d := describedAs(resp)
	p.fdArenas, p.sparseArenas = d.CUDAFDArenas, d.CUDASparseArenas
	if p.described == nil {
		p.described = map[Query]*Description{}
	}
	p.described[q] = d
	return d, nil
}

// describedAs converts a Describe answer, escaping the control characters
// in every name, once, where it enters the harness.
func describedAs(r *kvpb.DescribeResponse) *Description {
	r = printable(proto.CloneOf(r))
	d := &Description{Name: r.Name, Version: r.Version, Doc: r.Doc, said: r,
		CUDAFDArenas: r.CudaFdArenas, CUDASparseArenas: r.CudaSparseArenas, BenchRotation: r.BenchRotation, SlotBits: int(r.SlotBits), Doorbell: r.Doorbell}
	d.ReadNonFinite, d.ReadNonFiniteErr = wire.NonFiniteFromProto(r.ReadNonFinite)
	d.Slots = len(r.Addressing) == 0
	for _, a := range r.Addressing {
		d.Slots = d.Slots || a == kvpb.Addressing_ADDRESSING_SLOTS
		d.PageTable = d.PageTable || a == kvpb.Addressing_ADDRESSING_PAGE_TABLE
	}
	for _, k := range r.Kernels {
		d.Kernels = append(d.Kernels, protocol.Kernel(k))
	}
	for _, g := range r.Layouts {
		recipe, err := wire.RecipeFromProto(g.Recipe)
		d.Layouts = append(d.Layouts, Geometry{Layout: g.Layout, BytesPerToken: int(g.BytesPerToken),
			BytesPerPage: int(g.BytesPerPage), Recipe: recipe, RecipeErr: err, PadPolicy: wire.PadPolicyFromProto(g.PadPolicy)})
	}
	for _, v := range r.Variants {
		d.Variants = append(d.Variants, Variant{Name: v.Name, Doc: v.Doc, Correct: v.Correct,
			Kernel: protocol.Kernel(v.Kernel), Layouts: v.Layouts})
	}
	for _, b := range r.Backends {
		d.Backends = append(d.Backends, protocol.Backend(b))
	}
	return d
}

// printable escapes the control characters in every name of d, in place.
func printable(d *kvpb.DescribeResponse) *kvpb.DescribeResponse {
	d.Name, d.Version, d.Doc = textsafe.String(d.Name), textsafe.String(d.Version), textsafe.String(d.Doc)
	for i := range d.Kernels {
		d.Kernels[i] = textsafe.String(d.Kernels[i])
	}
	for _, g := range d.Layouts {
		g.Layout = textsafe.String(g.Layout)
	}
	for _, v := range d.Variants {
		v.Name, v.Doc, v.Kernel = textsafe.String(v.Name), textsafe.String(v.Doc), textsafe.String(v.Kernel)
	}
	return d
}

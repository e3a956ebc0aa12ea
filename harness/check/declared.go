package check

import (
	"context"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// declared asks the plugin what its code believes about layout l for a
// kernel and variant, and compares that with the layout: a mismatch is a
// stride violation every case carries (geometry), a missing kernel or
// layout an ErrUnsupported error.
func declared(ctx context.Context, p *plugin.Plugin, kernel, variant string, l *layout.Layout) (oracle.Declared, *oracle.Violation, error) {
	d, err := p.Describe(ctx, &kvpb.DescribeRequest{Variant: variant, HeadDim: uint32(l.HeadDim), PageSize: uint32(l.PageSize)})
	if err != nil {
		return oracle.Declared{}, nil, err
	}
	if !slices.Contains(d.Kernels, kernel) {
		return oracle.Declared{}, nil, fmt.Errorf("%w: %s has no %s kernel (it serves %v)", ErrUnsupported, p.Name, kernel, d.Kernels)
	}
	for _, g := range d.Layouts {
		if g.Layout == l.Name {
			dec := oracle.Declared{BytesPerToken: int(g.BytesPerToken), PageBytes: int(g.BytesPerPage)}
			return dec, geometryViolation(l, dec), nil
		}
	}
	return oracle.Declared{}, nil, fmt.Errorf("%w: %s has no layout %s for its %s kernel (it lists %v)",
		ErrUnsupported, p.Name, l.Name, kernel, layoutNames(d))
}

// Release detaches the plugin if the arena is still its attachment, and
// frees the arena; the plugin keeps running. Detaching first matters on
// the GPU: a device allocation may be freed only once its importer has
// closed its mapping.
func Release(ctx context.Context, p *plugin.Plugin, owner any, mem pool.Memory) {
	if p.AttachedTo(owner) {
		p.Detach(ctx)
	}
	mem.Close()
}

package pd

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/protocol"
	"github.com/kvharness/kvharness/harness/target"
)

// GeometryProblem is a buffer whose layout a plugin declares with other
// bytes per token or per page than the layout has: every descriptor of
// that buffer will carry a wrong item_len before any case runs.
type GeometryProblem struct {
	Buffer string
	Detail string
}

// CheckDeclared describes plugin p for every head dimension of g's
// buffers, requires the kernel kind and every buffer's layout (an
// ErrUnsupported error otherwise), and returns the buffers whose declared
// geometry is wrong.
func CheckDeclared(ctx context.Context, p *plugin.Plugin, kernel protocol.Kernel, variant string, g Geometry) ([]GeometryProblem, error) {
	byDim := map[int]*plugin.Description{}
	var out []GeometryProblem
	for i, b := range g.Buffers {
		d, ok := byDim[b.HeadDim]
		if !ok {
			var err error
			d, err = p.Describe(ctx, plugin.Query{Variant: variant, HeadDim: b.HeadDim, PageSize: g.PageSize})
			if err != nil {
				return nil, err
			}
			if err := target.Serves(p.Name, d, kernel); err != nil {
				return nil, err
			}
			byDim[b.HeadDim] = d
		}
		l, err := g.Layout(i)
		if err != nil {
			return nil, err
		}
		dg, err := target.Geometry(p.Name, d, kernel, l)
		if err != nil {
			return nil, fmt.Errorf("buffer %s: %w", b.Name, err)
		}
		if v := target.GeometryViolation(l, oracle.Declared{BytesPerToken: int(dg.BytesPerToken), PageBytes: int(dg.BytesPerPage)}); v != nil {
			out = append(out, GeometryProblem{Buffer: b.Name, Detail: v.Detail})
		}
	}
	return out, nil
}

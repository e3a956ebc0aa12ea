package kernel

import (
	"context"
	"fmt"

	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/cpuread"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
	"github.com/kvharness/kvharness/plugins/internal/gpuread"
)

// readVariants mutate the read kernel only; the store stays correct.
var readVariants = []sdk.Variant{
	read.Variant("scale-stride", "reads each scale where the other arrangement keeps it: "+
		"interleaved after the row in fp8-paged, packed after the page's rows in fp8-rows (vLLM #40991, read side)"),
	read.Variant("denormals-are-zero", "scores through arithmetic built with denormals flushed to zero (fast math): "+
		"a subnormal query element counts as a zero of its sign"),
}

// readRule is the CUDA read kernel's mutant rule for a variant.
func readRule(variant string) gpuread.Rule {
	if variant == "denormals-are-zero" {
		return gpuread.DenormalsAreZero
	}
	return gpuread.Correct
}

// flushed is c with its subnormal query elements flushed to zeros of
// their sign, in a copy (the staged queries are the harness's), as the
// denormals-are-zero variant reads them.
func flushed(c *read.Call) *read.Call {
	x := *c
	x.Queries = make([]uint16, len(c.Queries))
	for i, e := range c.Queries {
		if e&0x7f80 == 0 { // exponent zero: a subnormal or a zero
			e &= 0x8000
		}
		x.Queries[i] = e
	}
	return &x
}

// readGeometry is where the read kernel finds a token's values and where
// it reads its scale from. The store's geometry is the truth; the
// scale-stride mutant reads scales through the other arrangement.
func readGeometry(variant string, l sdk.Layout) (values, scales cpustore.Geometry, err error) {
	d, p := l.HeadDim, l.PageSize
	values, _, err = geometry("", l.Name, d, p)
	if err != nil {
		return nil, nil, err
	}
	if variant != "scale-stride" {
		return values, values, nil
	}
	switch l.Name {
	case "fp8-paged":
		return values, cpustore.Rows{Stride: d + 4, ValueBytes: d}, nil
	case "fp8-rows":
		return values, cpustore.Paged{P: p, ValueBytes: d, ScaleBytes: 4, PageBytes: (d + 4) * p}, nil
	}
	return nil, nil, fmt.Errorf("fp8store reads fp8-paged and fp8-rows, not %s", l.Name)
}

// Read implements read.Reader.
func (*kernel) Read(_ context.Context, c *read.Call) error {
	values, scales, err := readGeometry(c.Variant, c.Pool.Layout)
	if err != nil {
		return err
	}
	if c.Variant == "denormals-are-zero" {
		c = flushed(c)
	}
	cpuread.Run(c, cpuread.FP8{Pool: c.Arena[c.Pool.Base:], Values: values, Scales: scales}, cpuread.ListSpan)
	return nil
}

// reads caches the compiled CUDA read kernels.
var reads gpuread.Kernels

// ReadDevice implements read.DeviceReader.
func (*kernel) ReadDevice(_ context.Context, c *read.DeviceCall) error {
	values, scales, err := readGeometry(c.Variant, c.Pool.Layout)
	if err != nil {
		return err
	}
	l := c.Pool.Layout
	return reads.Read(c, gpuread.Spec{Name: "fp8store/read/" + l.Name, Kind: gpuread.FP8, HeadDim: l.HeadDim,
		Values: values, Scales: scales, Rule: readRule(c.Variant)})
}

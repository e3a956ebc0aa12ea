package layout

import (
	"encoding/json"
	"fmt"

	"github.com/kvharness/kvharness/harness/internal/inputfile"
	"github.com/kvharness/kvharness/harness/internal/textsafe"
)

// Parse reads a layout description in JSON. The file's page_size may be
// omitted; pageSize then applies. Unknown keys are errors, so a typo does
// not silently produce a different layout.
//
//	{"name": "dsv4-main", "head_dim": 512, "page_align": 576,
//	 "fields": [{"name": "nope", "kind": "e4m3", "from": 0, "to": 448, "group": 64,
//	             "recipe": {"eps": 1e-8, "quantize": "reciprocal"}}, ...,
//	            {"name": "pad", "kind": "pad", "bytes": 1, "policy": "zero"}],
//	 "planes": [["nope", "rope"], ["scales", "pad"]]}
//
// An e4m3 field's recipe (see [Recipe]: scale "f32" or "ue8m0", eps,
// quantize "divide" or "reciprocal", rounding "nearest-even", saturate,
// scale_ulps) defaults to eps 1e-4, x/s, saturating, 1 ulp; a pad field's
// policy to "any". A value out of bounds is an error naming the field.
//
// Fields may instead be placed (see [Place]): heads, tensors, regions and
// each field's shape:stride modes, as [BuiltinDims]'s layouts print them:
//
//	{"name": "flashinfer-hnd", "head_dim": 128, "page_size": 16, "heads": 8,
//	 "tensors": ["k", "v"], "regions": [{"name": "kv"}],
//	 "fields": [{"name": "k", "kind": "bf16", "to": 128, "tensor": "k",
//	             "place": {"region": "kv", "maps": [
//	               {"of": ["slot"], "shape": [16], "stride": [256]},
//	               {"of": ["head"], "shape": [8], "stride": [4096]},
//	               {"of": ["unit"], "shape": [128], "stride": [2]}]}}, ...]}
//
// A layout with placed fields states its page_size.
func Parse(data []byte, pageSize int) (*Layout, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes of description, more than %d", ErrInvalid, len(data), MaxFileBytes)
	}
	var l Layout
	if err := inputfile.DecodeJSON(data, &l); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var given struct {
		PageSize *int `json:"page_size"`
	}
	json.Unmarshal(data, &given) // decoded strictly above
	switch {
	case given.PageSize != nil && *given.PageSize < 1:
		return nil, fmt.Errorf("%w: page_size %d: want a page size of 1..65536 tokens, or leave it out to take --page-size", ErrInvalid, *given.PageSize)
	case l.Name == "" || textsafe.String(l.Name) != l.Name:
		return nil, fmt.Errorf("%w: name %q: want a name of printable characters", ErrInvalid, textsafe.String(l.Name))
	}
	if l.PageSize == 0 {
		for _, f := range l.Fields {
			if f.Place != nil {
				return nil, fmt.Errorf("%w %q: field %q has a place, whose strides are for one page size: state page_size", ErrInvalid, l.Name, f.Name)
			}
		}
		l.PageSize = pageSize
	}
	if err := l.compile(); err != nil {
		return nil, err
	}
	return &l, nil
}

// MaxFileBytes bounds a layout description: the largest real one is a few
// hundred bytes.
const MaxFileBytes = 1 << 20

// Load reads a layout file; see [Parse].
func Load(path string, pageSize int) (*Layout, error) {
	data, err := inputfile.Read(path, "layout file", MaxFileBytes)
	if err != nil {
		return nil, err
	}
	l, err := Parse(data, pageSize)
	if err != nil {
		return nil, fmt.Errorf("layout file %s: %w; correct the file (the README's Layouts section shows the format)", path, err)
	}
	return l, nil
}

// JSON renders a layout in the form Parse reads.
func (l *Layout) JSON() []byte {
	b, _ := json.MarshalIndent(l, "", "  ")
	return b
}

package enginestore

import (
	_ "embed"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk/store"
	"github.com/kvharness/kvharness/plugins/internal/fncache"
)

//go:embed enginestore.cu
var source string

// cudaLayouts are ES_LAYOUT's numbers in enginestore.cu.
var cudaLayouts = map[string]int{
	"vllm-flash": 1, "sglang-mha": 1, "vllm-flash-fp8": 2, "vllm-flash-e5m2": 3, "flashinfer-nhd": 4, "flashinfer-hnd": 5,
	"vllm-paged": 6, "vllm-paged-fp8": 7, "vllm-mla-fp8": 8, "sglang-indexer-preshuffle": 9, "nvfp4-kv": 10,
	"nvfp4-kv-hnd": 11, "mxfp8-kv": 12,
}

// Device compiles and launches the CUDA stores, one compiled kernel per
// layout, geometry, padding rule and mistakes.
type Device struct {
	fns fncache.Cache
}

// Options are the NVRTC options of a layout's kernel: rule is the
// padding rule's number (fusedstore's FUSED_RULE), b the mistakes.
func Options(name string, d Dims, rule int, b Bugs) ([]string, error) {
	id, ok := cudaLayouts[name]
	if !ok {
		return nil, fmt.Errorf("enginestore has no CUDA store for layout %s", name)
	}
	def := func(k string, v int) string { return fmt.Sprintf("-D%s=%d", k, v) }
	b2i := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	return []string{def("ES_LAYOUT", id), def("ES_H", d.Heads), def("ES_D", d.HeadDim), def("ES_P", d.PageSize),
		def("ES_PAGES", d.Pages), def("ES_RULE", rule), def("ES_BUG_SWAP_NHD", b2i(b.SwapNHD)), def("ES_BUG_OTHER_X", b2i(b.OtherX)),
		def("ES_BUG_SWAP_KV", b2i(b.SwapKV)), def("ES_BUG_SCALE_MUL", b2i(b.ScaleMul)), def("ES_BUG_E5M2", b2i(b.E5M2)),
		def("ES_BUG_NIBBLE_SWAP", b2i(b.NibbleSwap)), def("ES_BUG_UNSWIZZLED", b2i(b.Unswizzled)),
		def("ES_BUG_RESERVED_NANS", b2i(b.ReservedNaNs))}, nil
}

// Source is the CUDA C of the stores.
func Source() string { return source }

// Store queues c's store on its stream: a block of 128 threads per row.
// The static scales are launch arguments: a target passes the same ones
// to every call, so a captured graph replays them rightly.
func (k *Device) Store(c *store.DeviceCall, rule int, b Bugs) error {
	if c.SlotBits != 64 && c.Table == nil {
		return fmt.Errorf("loc holds %d-bit slots; the engine stores read 64-bit ones", c.SlotBits)
	}
	l := c.Pool.Layout
	d := Dims{Heads: l.Heads, HeadDim: l.HeadDim, PageSize: l.PageSize, Pages: c.Pool.Pages()}
	opts, err := Options(l.Name, d, rule, b)
	if err != nil {
		return err
	}
	entry := "enginestore"
	if c.Table != nil {
		entry = "enginestore_table"
	}
	f, err := k.fns.Function(c.Device, "enginestore/"+l.Name, source, entry, slices.Clone(opts))
	if err != nil {
		return err
	}
	ks, vs := firstScale(c.Scales, "k"), firstScale(c.Scales, "v")
	if l.Name == "vllm-mla-fp8" {
		ks = firstScale(c.Scales, "")
	}
	if t := c.Table; t != nil { // page-table addressing: enginestore_table
		return f.Launch(c.Stream, cuda.Dim3{X: uint32(c.Capacity), Y: 1, Z: 1}, cuda.Dim3{X: 128, Y: 1, Z: 1}, 0,
			c.PoolBase(), c.Rows, t.Indptr, t.Indices, t.LastPageLen, t.BatchIndices, t.Positions, int32(c.Capacity), ks, vs)
	}
	return f.Launch(c.Stream, cuda.Dim3{X: uint32(c.Capacity), Y: 1, Z: 1}, cuda.Dim3{X: 128, Y: 1, Z: 1}, 0,
		c.PoolBase(), c.Rows, c.Loc, c.Valid, int32(c.Capacity), int64(c.Pool.Slots), ks, vs)
}

func firstScale(s map[string][]float32, name string) float32 {
	if v := s[name]; len(v) > 0 {
		return v[0]
	}
	return 1
}

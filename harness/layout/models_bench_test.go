package layout

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkModels times the engine layouts' per-row and per-byte
// questions at 8 heads × 128, page size 16 (MXFP8: 32): encode and
// judge a row that passes (K and V: 2048 elements), a slot's footprint,
// a byte's owner in a 4096-slot pool.
func BenchmarkModels(b *testing.B) {
	for _, name := range []string{"vllm-flash", "flashinfer-hnd", "vllm-paged", "vllm-flash-fp8", "nvfp4-kv", "mxfp8-kv"} {
		p := 16
		if name == "mxfp8-kv" {
			p = 32
		}
		l, err := BuiltinDims(name, Dims{Heads: 8, HeadDim: 128, PageSize: p})
		if err != nil {
			b.Fatal(err)
		}
		const slots = 4096
		if l, err = l.ForPool(slots); err != nil {
			b.Fatal(err)
		}
		in := Inputs{Scales: map[string][]float32{"k": {0.02}, "v": {0.5}}}
		if len(l.ScaleInputs()) == 0 {
			in = Inputs{}
		}
		row := randomRow(rand.New(rand.NewPCG(1, 1)), l.RowElems(), 1)
		recs := l.EncodeWith(row, in)
		b.Run(name+"/judge", func(b *testing.B) {
			for b.Loop() {
				if len(l.JudgeWith(row, in, recs, ByRecipe)) > 0 {
					b.Fatal("the reference fails")
				}
			}
		})
		b.Run(name+"/encode", func(b *testing.B) {
			for b.Loop() {
				l.EncodeWith(row, in)
			}
		})
		b.Run(name+"/footprint", func(b *testing.B) {
			var slot int64
			for b.Loop() {
				l.Footprint(slot)
				slot = (slot + 97) % slots
			}
		})
		b.Run(name+"/locate", func(b *testing.B) {
			pool, off := l.PoolBytes(slots), 0
			for b.Loop() {
				l.Locate(off, slots)
				off = (off + 4099) % pool
			}
		})
	}
}

package layout_test

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/layout"
)

// A FlashInfer HND cache of 2 heads × 8 elements, 4 tokens a page: each
// head of a slot is its own run of 16 bytes, so a slot's footprint has a
// span per head per tensor, K's then V's.
func ExampleBuiltinDims() {
	l, err := layout.BuiltinDims("flashinfer-hnd", layout.Dims{Heads: 2, HeadDim: 8, PageSize: 4})
	if err != nil {
		panic(err)
	}
	fmt.Println(l.BytesPerToken(), "bytes per token,", l.PageBytes(), "per page")
	fmt.Println("slot 5:", l.Footprint(5))
	o, _ := l.Locate(300, 8)
	fmt.Printf("byte 300: slot %d, field %s, piece %d, offset %d\n", o.Slot, o.Field, o.Plane, o.Offset)
	fmt.Println(l.Fields[0].Place)
	// Output:
	// 64 bytes per token, 256 per page
	// slot 5: [{272 16} {336 16} {400 16} {464 16}]
	// byte 300: slot 6, field k, piece 0, offset 12
	// kv+0 [slot][4]:[16] [head][2]:[64] [unit][8]:[2]
}

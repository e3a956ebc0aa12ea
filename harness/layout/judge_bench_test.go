package layout

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkJudge times one row's judgement, against the reference
// encoding the exact comparison needs, for an fp8 row layout and
// DeepSeek-V4's main layout, on bytes that pass (the common case).
func BenchmarkJudge(b *testing.B) {
	for _, name := range []string{"fp8-rows", "dsv4-main"} {
		l, _ := Builtin(name, 0, 64)
		row := randomRow(rand.New(rand.NewPCG(1, 1)), l.HeadDim, 1)
		recs := l.Encode(row)
		b.Run(name+"/judge", func(b *testing.B) {
			for b.Loop() {
				if len(l.Judge(row, recs, ByRecipe)) > 0 {
					b.Fatal("the reference fails")
				}
			}
		})
		b.Run(name+"/encode", func(b *testing.B) {
			for b.Loop() {
				l.Encode(row)
			}
		})
	}
}

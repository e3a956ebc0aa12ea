package cpustore

import (
	"math"
	"math/rand"
	"testing"
)

// BenchmarkPutFP8 is one 128-element row quantized and stored: the CPU
// plugins' fp8 store loop, which every fp8 case pays per valid row.
func BenchmarkPutFP8(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	row := make([]uint16, 128)
	for i := range row {
		row[i] = uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
	}
	arena := make([]byte, 256)
	for b.Loop() {
		Exact.PutFP8(arena, 0, 128, row)
	}
}

package gpustore

import "github.com/kvharness/kvharness/harness/cuda"

// RowsPerBlock is how many rows one block covers.
func (s Spec) RowsPerBlock() int {
	if s.Kind == FP8 {
		return fp8Warps * fp8RowsPerWarp
	}
	return s.bf16RowsPerBlock() * bf16RowsPerThread
}

// Shape is a launch's grid and block for a batch of capacity rows. It
// depends on the capacity only, never on the valid count, so a graph
// captured at capacity C covers every n <= C.
func (s Spec) Shape(capacity int) (grid, block cuda.Dim3) {
	threads := 32 * fp8Warps
	if s.Kind == BF16 {
		threads = s.bf16Threads() * s.bf16RowsPerBlock()
	}
	per := s.RowsPerBlock()
	return cuda.Dim3{X: uint32((max(capacity, 1) + per - 1) / per)}, cuda.Dim3{X: uint32(threads)}
}

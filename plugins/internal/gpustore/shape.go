package gpustore

import "github.com/kvharness/kvharness/harness/cuda"

// RowsPerBlock is how many rows one block covers.
func (s Spec) RowsPerBlock() int {
	t := s.tuning()
	lanes := t.BF16Lanes
	if s.Kind == FP8 {
		lanes = t.FP8Lanes
	}
	return t.BlockThreads / max(lanes, 1) * t.RowsPerThread
}

// Shape is a launch's grid and block for a batch of capacity rows. It
// depends on the capacity only, never on the valid count, so a graph
// captured at capacity C covers every n <= C.
func (s Spec) Shape(capacity int) (grid, block cuda.Dim3) {
	per := s.RowsPerBlock()
	return cuda.Dim3{X: uint32((max(capacity, 1) + per - 1) / per)}, cuda.Dim3{X: uint32(s.tuning().BlockThreads)}
}

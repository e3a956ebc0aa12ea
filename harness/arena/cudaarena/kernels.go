package cudaarena

import (
	_ "embed"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena/internal/baseline"

	"github.com/kvharness/kvharness/harness/cuda"
)

//go:embed background.cu
var kernelSource string

// blockBytes is the granularity of the diff kernel: one warp of 32 lanes
// checks one 8-byte word each.
const blockBytes = 256

// threads per CUDA block for every kernel here; a multiple of the warp size,
// as diff_background requires.
const threads = 256

// kernels are the compiled entry points of background.cu.
type kernels struct {
	mod                                             *cuda.Module
	fill, diff, diffFast, diffList, gather, restore *cuda.Function
	sms                                             int
	s                                               *cuda.Stream // the arena's: every launch queues on it
}

func loadKernels(dev *cuda.Device, s *cuda.Stream) (*kernels, error) {
	mod, err := dev.Compile("cudapool/background.cu", kernelSource, "-lineinfo")
	if err != nil {
		return nil, err
	}
	k := &kernels{mod: mod, sms: dev.Multiprocessors(), s: s}
	for name, dst := range map[string]**cuda.Function{
		"fill_background": &k.fill,
		"diff_background": &k.diff,
		"diff_blocks":     &k.diffFast,
		"diff_pieces":     &k.diffList,
		"gather_blocks":   &k.gather,
		"restore_pieces":  &k.restore,
	} {
		if *dst, err = mod.Function(name); err != nil {
			mod.Unload()
			return nil, err
		}
	}
	return k, nil
}

// grid sizes a grid-stride launch over units of work, each unit taking
// perUnit threads: enough blocks to fill the GPU, no more than the work.
func (k *kernels) grid(units, perUnit int) cuda.Dim3 {
	blocks := (units*perUnit + threads - 1) / threads
	return cuda.Dim3{X: uint32(max(1, min(blocks, 16*max(k.sms, 1))))}
}

// fillRange writes, over arena bytes [lo, hi), the background of seed for
// the window filled from arena byte origin (origin <= lo).
func (k *kernels) fillRange(arena cuda.Ptr, lo, hi int, seed uint64, origin int) error {
	words := (hi+7)/8 - lo/8
	err := k.fill.Launch(k.s, k.grid(words, 1), cuda.Dim3{X: threads}, 0,
		arena, uint64(lo), uint64(hi), seed, uint64(origin))
	if err != nil {
		return fmt.Errorf("fill arena [%d,%d): %w", lo, hi, err)
	}
	return nil
}

// scanTo is where a scan reports changed blocks: their count, a list of
// capacity indices and the bytes of the first packedCap of them.
type scanTo struct {
	count, list cuda.Ptr
	capacity    int
	packed      cuda.Ptr
	packedCap   int
}

// diffRange queues a scan of arena bytes [lo, hi) of the piece against its
// baseline, any alignment.
func (k *kernels) diffRange(arena cuda.Ptr, p baseline.Piece, lo, hi int, to scanTo) error {
	pairs := ((hi+blockBytes-1)/blockBytes - lo/blockBytes + 1) / 2
	err := k.diff.Launch(k.s, k.grid(pairs, 32), cuda.Dim3{X: threads}, 0,
		arena, uint64(lo), uint64(hi), p.Seed, uint64(p.Origin), b2u(p.Filled),
		to.count, to.list, uint32(to.capacity), to.packed, uint32(to.packedCap))
	if err != nil {
		return fmt.Errorf("scan arena [%d,%d): %w", lo, hi, err)
	}
	return nil
}

// diffWhole queues the fast scan of whole blocks [b0, b1) of a piece whose
// window starts on a word.
func (k *kernels) diffWhole(arena cuda.Ptr, p baseline.Piece, b0, b1 int, to scanTo) error {
	err := k.diffFast.Launch(k.s, k.grid((b1-b0+7)/8, 32), cuda.Dim3{X: threads}, 0,
		arena, uint64(b0), uint64(b1), p.Seed, uint64(p.Origin/8), b2u(p.Filled),
		to.count, to.list, uint32(to.capacity), to.packed, uint32(to.packedCap))
	if err != nil {
		return fmt.Errorf("scan arena blocks [%d,%d): %w", b0, b1, err)
	}
	return nil
}

// diffPieces queues the scan of the n pieces encoded at list, a block per
// piece.
func (k *kernels) diffPieces(arena, list cuda.Ptr, n int, to scanTo) error {
	grid := cuda.Dim3{X: uint32(max(1, min(n, 16*max(k.sms, 1))))}
	err := k.diffList.Launch(k.s, grid, cuda.Dim3{X: threads}, 0, arena, list, uint32(n),
		to.count, to.list, uint32(to.capacity), to.packed, uint32(to.packedCap))
	if err != nil {
		return fmt.Errorf("scan %d arena windows: %w", n, err)
	}
	return nil
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// gatherBlocks copies the n blocks listed at list to out.
func (k *kernels) gatherBlocks(arena, list cuda.Ptr, n int, out cuda.Ptr) error {
	err := k.gather.Launch(k.s, k.grid(n*16, 1), cuda.Dim3{X: threads}, 0, arena, list, uint32(n), out)
	if err != nil {
		return fmt.Errorf("gather %d changed blocks: %w", n, err)
	}
	return nil
}

// pieceWords is the size, in 8-byte words, of background.cu's struct piece.
const pieceWords = 5

// restorePieces queues the restore of the n pieces encoded at list, a
// block per piece.
func (k *kernels) restorePieces(arena, list cuda.Ptr, n int) error {
	grid := cuda.Dim3{X: uint32(max(1, min(n, 16*max(k.sms, 1))))}
	if err := k.restore.Launch(k.s, grid, cuda.Dim3{X: threads}, 0, arena, list, uint32(n)); err != nil {
		return fmt.Errorf("restore %d changed arena ranges: %w", n, err)
	}
	return nil
}

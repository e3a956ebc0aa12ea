package cudapool

import (
	_ "embed"
	"fmt"

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
	mod                *cuda.Module
	fill, diff, gather *cuda.Function
	sms                int
}

func loadKernels(dev *cuda.Device) (*kernels, error) {
	mod, err := dev.Compile("cudapool/background.cu", kernelSource, "-lineinfo")
	if err != nil {
		return nil, err
	}
	k := &kernels{mod: mod, sms: dev.Multiprocessors()}
	for name, dst := range map[string]**cuda.Function{
		"fill_background": &k.fill,
		"diff_background": &k.diff,
		"gather_blocks":   &k.gather,
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
	err := k.fill.Launch(nil, k.grid(words, 1), cuda.Dim3{X: threads}, 0,
		arena, uint64(lo), uint64(hi), seed, uint64(origin))
	if err != nil {
		return fmt.Errorf("fill arena [%d,%d): %w", lo, hi, err)
	}
	return nil
}

// diffRange queues a scan of the piece's arena bytes against its baseline.
func (k *kernels) diffRange(arena cuda.Ptr, p piece, count, list cuda.Ptr, capacity int) error {
	blocks := (p.End()+blockBytes-1)/blockBytes - p.Off/blockBytes
	filled := uint32(0)
	if p.filled {
		filled = 1
	}
	err := k.diff.Launch(nil, k.grid(blocks, 32), cuda.Dim3{X: threads}, 0,
		arena, uint64(p.Off), uint64(p.End()), p.seed, uint64(p.origin), filled, count, list, uint32(capacity))
	if err != nil {
		return fmt.Errorf("scan arena [%d,%d): %w", p.Off, p.End(), err)
	}
	return nil
}

// gatherBlocks copies the n blocks listed at list to out.
func (k *kernels) gatherBlocks(arena, list cuda.Ptr, n int, out cuda.Ptr) error {
	err := k.gather.Launch(nil, k.grid(n*16, 1), cuda.Dim3{X: threads}, 0, arena, list, uint32(n), out)
	if err != nil {
		return fmt.Errorf("gather %d changed blocks: %w", n, err)
	}
	return nil
}

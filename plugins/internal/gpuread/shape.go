package gpuread

import "fmt"

// SharedBytes is the shared memory a block may use without opting in to
// more: the query (4 bytes an element) and the candidate buffer (8 bytes a
// key) must fit.
const SharedBytes = 48 << 10

// MaxSlots bounds the slots a pool may have: the kernel keeps a slot in 32
// bits, and the all-ones word marks no slot.
const MaxSlots = 1<<32 - 1

// chunkWanted is how many tokens a round scores at most: enough to keep
// every warp busy for a while, few enough that a short list costs a small
// sort.
const chunkWanted = 1024

// Buffer is the candidate buffer's size in keys for a read of k results
// and tokens tokens in all: a power of two holding the k best so far and
// a chunk of new scores, within SharedBytes next to the query.
func Buffer(k, tokens, headDim int) (int, error) {
	limit := (SharedBytes - 4*headDim) / 8
	want := k + max(1, min(tokens, chunkWanted))
	n := 64
	for n < want && 2*n <= limit {
		n *= 2
	}
	if n <= k || n > limit {
		return 0, fmt.Errorf("k %d with head dim %d: the CUDA read kernel keeps at most %d candidates in shared memory; use a smaller k or the shm backend",
			k, headDim, max(limit-1, 0))
	}
	return n, nil
}

// Package cudapool is the CUDA device-memory backend of the harness arena: a
// pool.Memory whose bytes live in one cuMemAlloc allocation, exported to the
// plugin process through a CUDA IPC handle.
//
// It behaves exactly like pool.SHM, so the oracle cannot tell them apart: the
// arena starts zeroed, Fill writes the seeded background of pool.Background
// counted from the window's start, and Changed reports the maximal byte
// ranges that differ from the baseline, sorted by offset.
//
// The baseline is kept as the list of filled windows and their seeds, not as
// a second copy of the arena: kernels compute the background on the fly. To
// answer Changed without copying the arena to the host, a diff kernel lists
// the 256-byte blocks that differ, a gather kernel packs those blocks
// together, and only they are copied back and compared byte by byte.
package cudapool

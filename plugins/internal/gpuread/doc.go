// Package gpuread builds and launches the bundled plugins' CUDA read
// kernel (read.cu): one block per request, the dot products by warps, the
// top k by a bitonic sort in shared memory. A plugin supplies the same
// cpustore.Geometry its CPU read kernel uses (values, and where it reads
// scales from) and its mutant rule; gpuread turns them into -D macros,
// compiles with NVRTC for the device (cuda.Compile caches cubins) and
// launches one block per request.
//
// The CPU and GPU kernels agree on which tokens are read, the result order
// and the padding; their float32 scores may differ in the last bits,
// because a warp sums in another order than the CPU loop. The harness's
// score tolerance covers that (see package oracle).
package gpuread

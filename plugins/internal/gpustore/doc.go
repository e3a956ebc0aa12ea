// Package gpustore builds and launches the bundled plugins' CUDA store
// kernels. A plugin supplies its own CUDA C (the Rule that decides which
// rows are stored and into which slot, and its extern "C" entry points) and
// the same cpustore.Geometry its CPU kernel uses; gpustore prepends the
// shared kernel bodies (store.cuh), turns the geometry into -D macros,
// compiles with NVRTC for the device (cubins are cached by cuda.Compile),
// and launches with the matching grid.
//
// The GPU and CPU kernels must agree byte for byte, mutants included: the
// address math therefore comes from one description, the CPU geometry,
// and the fp8 path uses IEEE division (no fast math) and the hardware's
// round-to-nearest-even conversion, which the CPU reference reproduces.
package gpustore

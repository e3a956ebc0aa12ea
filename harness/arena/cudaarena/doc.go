// Package cudapool is the CUDA device-memory backend of the harness arena: a
// pool.Memory whose bytes live in one device allocation the plugin process
// maps too: VMM memory whose file descriptor a Unix socket hands out (FD,
// for plugins that declare it: both processes map it with large pages), or
// a cuMemAlloc allocation exported by CUDA IPC handle (IPC).
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
// ChangedIn does the same for a list of windows (the slots a flight of
// store cases names) in one launch of a kernel that takes a window per
// CUDA block, so checking ahead scans a flight in one trip to the device.
package cudaarena

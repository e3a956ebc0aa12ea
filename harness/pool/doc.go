// Package pool holds the memory kernels write into: an arena with one or
// more KV-cache pools, each between two guard zones, and a staging region
// for call inputs and outputs.
//
// The arena lives in a backend that both the harness and the plugin process
// map: host shared memory by default (a 0600 file in a private 0700
// directory), CUDA device memory on a GPU. Nothing but offsets crosses the
// RPC boundary.
//
// Every guard and pool byte starts as a seeded background that is a pure
// function of (seed, offset), so the expected content of any byte is known
// without keeping a copy, and a case can be replayed from its seed. After a
// kernel call the backend reports which byte ranges differ from the
// background ([Memory.Changed]) and puts them back ([Memory.Reset]): checking
// a case costs a scan of the pool, not a refill.
package pool

package protocol

import "fmt"

// The contract's values in Go, for the harness's packages that speak of
// plugins without speaking the wire: the plugin client (harness/plugin)
// and the attach builder convert them to and from the messages.

// Backend is a memory a plugin's kernels run on, as Describe lists it.
type Backend int

// The backends, numbered as the wire numbers them.
const (
	BackendSHM  Backend = 1 // host shared memory
	BackendCUDA Backend = 2 // CUDA device memory
)

// String names a backend as the protocol does (BACKEND_SHM), the names
// messages about a plugin's backends print.
func (b Backend) String() string {
	switch b {
	case BackendSHM:
		return "BACKEND_SHM"
	case BackendCUDA:
		return "BACKEND_CUDA"
	}
	return fmt.Sprint(int(b))
}

// ArenaDesc tells a plugin how to map one region of an arena: a file in
// host shared memory by its path, or a CUDA allocation by exactly one of
// an IPC handle or a socket that hands out its file descriptor (with the
// allocation's size, MappedSize).
type ArenaDesc struct {
	Backend Backend
	// Pinned asks the plugin to register host shared memory with its GPU
	// (cuMemHostRegister): a layer-load kind's host pool.
	Pinned     bool
	Path       string
	IPCHandle  []byte
	Device     int
	Size       int // the bytes the pools and staging use, from offset 0
	FDSocket   string
	MappedSize int // the exported allocation's size: Size rounded up to its granularity
	// Pieces, when set, make a descriptor-shared CUDA arena sparse: only
	// these windows of its MappedSize bytes are backed, sorted and apart,
	// held back to back in the exported allocation. Sent only to a
	// plugin that declares CUDASparseArenas.
	Pieces []Piece
}

// Piece is a backed window of a sparse arena: Len bytes at offset Off.
type Piece struct{ Off, Len int }

package sdk

import (
	"fmt"
	"strconv"
	"strings"
)

// PoolName is what the harness says about a transfer buffer in its pool's
// name (kvpb.PoolDesc.name), in the form
//
//	side/buffer[;alloc=A][;shift=N]
//
// e.g. "src/L0.kv", "dst/L0.state;alloc=L0.kv", "src/L0.indexk;shift=11".
// The protocol has no field for a buffer's allocation or page table, so the
// name carries them. Unknown attributes are ignored, so that a newer
// harness can add some without breaking older plugins.
type PoolName struct {
	Side   string // "src" (prefill) or "dst" (decode)
	Buffer string // the buffer, the same on both sides
	// Alloc names the allocation the buffer is carved from; "" when it owns
	// one. Buffers of a side with the same AllocKey share one registered
	// base address, as tensors shared by two layer groups do.
	Alloc string
	// Shift is the buffer's page table: a room's page p lives in physical
	// page (p + Shift) mod pages of this buffer.
	Shift int
}

// AllocKey is the allocation the buffer belongs to.
func (n PoolName) AllocKey() string {
	if n.Alloc != "" {
		return n.Alloc
	}
	return n.Buffer
}

// ParsePoolName reads a transfer pool's name.
func ParsePoolName(s string) (PoolName, error) {
	attrs := strings.Split(s, ";")
	side, buffer, ok := strings.Cut(attrs[0], "/")
	if !ok || buffer == "" || (side != "src" && side != "dst") {
		return PoolName{}, fmt.Errorf("pool name %q: want side/buffer with side src or dst", s)
	}
	n := PoolName{Side: side, Buffer: buffer}
	for _, a := range attrs[1:] {
		key, value, _ := strings.Cut(a, "=")
		switch key {
		case "alloc":
			n.Alloc = value
		case "shift":
			v, err := strconv.Atoi(value)
			if err != nil || v < 0 {
				return PoolName{}, fmt.Errorf("pool name %q: shift %q is not a page count", s, value)
			}
			n.Shift = v
		}
	}
	return n, nil
}

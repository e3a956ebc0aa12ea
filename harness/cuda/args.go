package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// kernelArgs is the kernelParams array of cuLaunchKernel: ptrs[i] points at
// the value of argument i. Every value sits in its own 8-byte slot, which
// satisfies the alignment of every supported type; a 4-byte value occupies
// the slot's first bytes (little-endian), where the driver reads it.
type kernelArgs struct {
	slots []uint64
	ptrs  []unsafe.Pointer
}

// packArgs lays out kernel arguments. Only fixed-size types are accepted,
// and int is not one: a kernel parameter is int32 or int64, so the caller
// must say which.
func packArgs(args []any) (*kernelArgs, error) {
	ka := &kernelArgs{slots: make([]uint64, len(args)), ptrs: make([]unsafe.Pointer, len(args))}
	for i, a := range args {
		v, err := argBits(a)
		if err != nil {
			return nil, fmt.Errorf("kernel argument %d: %w", i, err)
		}
		ka.slots[i] = v
		ka.ptrs[i] = unsafe.Pointer(&ka.slots[i])
	}
	return ka, nil
}

func argBits(a any) (uint64, error) {
	switch v := a.(type) {
	case Ptr:
		return uint64(v), nil
	case int32:
		return uint64(uint32(v)), nil
	case uint32:
		return uint64(v), nil
	case int64:
		return uint64(v), nil
	case uint64:
		return v, nil
	case float32:
		return uint64(math.Float32bits(v)), nil
	}
	return 0, fmt.Errorf("type %T is not supported; pass Ptr, int32, uint32, int64, uint64 or float32 matching the kernel's parameter", a)
}

// params returns the void** for cuLaunchKernel, pinning the slots: the array
// is Go memory holding Go pointers, which the cgo rules allow only when the
// pointees are pinned. Unpin after the launch call returns (the driver
// copies the values at launch).
func (ka *kernelArgs) params(pin *runtime.Pinner) unsafe.Pointer {
	if len(ka.ptrs) == 0 {
		return nil
	}
	pin.Pin(&ka.slots[0])
	return unsafe.Pointer(&ka.ptrs[0])
}

package store

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Slot index width. Engines pass loc as int32 as often as int64; a
// plugin declares which its store reads, and the target stages loc at
// that width: a kernel reading int64 from int32 staging would read two
// slots as one. The generator's slots need no change: every valid slot
// lies in the pool (a pool of more than 2^31-1 slots is refused for a
// 32-bit kernel, which could not address it), and the -1 sentinel is -1
// at either width.

// putSlots encodes loc little-endian at bits (32 or 64; 0 means 64) per
// slot.
func putSlots(loc []int64, bits int) []byte {
	return putSlotsInto(make([]byte, slotWidth(bits)*len(loc)), loc, bits)
}

// putSlotsInto encodes loc as putSlots does into dst, which must hold
// them, and returns the bytes written: staging reuses its buffers.
func putSlotsInto(dst []byte, loc []int64, bits int) []byte {
	w := slotWidth(bits)
	dst = dst[:w*len(loc)]
	for i, s := range loc {
		if w == 4 {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(int32(s)))
		} else {
			binary.LittleEndian.PutUint64(dst[8*i:], uint64(s))
		}
	}
	return dst
}

// slotWidth is the bytes of one staged slot at bits.
func slotWidth(bits int) int {
	if bits == 32 {
		return 4
	}
	return 8
}

// checkSlotWidth refuses a pool whose slots a kernel of the declared
// width cannot index.
func checkSlotWidth(bits, slots int, plugin string) error {
	if bits == 32 && int64(slots)-1 > math.MaxInt32 {
		return fmt.Errorf("pool of %d slots: plugin %s reads 32-bit slots, which index at most %d; use --slots %d or fewer",
			slots, plugin, int64(math.MaxInt32)+1, int64(math.MaxInt32)+1)
	}
	return nil
}

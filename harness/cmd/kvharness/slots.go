package main

import (
	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/kernels/transfer"
	"github.com/kvharness/kvharness/harness/protocol"
)

// Default pools, per kernel kind, when --slots is not given. A store's
// pool must be large enough that slot indices past 16 bits occur (a
// kernel that narrows loc to uint16 dies on the first case that draws one)
// and that its pages are many; 131,072 slots are three 32 MiB pools a set
// on the CPU, which checks them at nearly the speed of small ones (only
// the rows a case names are scanned; a full scan proves a window of
// cases). On the GPU, which scans at device speed, the default is a
// serving engine's pool: a million slots. A transfer gets 256 pages, so
// runs cross multiples of 64 pages; a read keeps 4,096 slots, whose every
// key it scores, and so does any other kind.
const (
	storeSlotsCPU  = 1 << 17
	storeSlotsCUDA = 1 << 20
	transferPages  = 256
	readSlots      = 4096
)

// slotDefaults is the --slots help's account of defaultSlots.
const slotDefaults = "stores 131072 on cpu and 1048576 on cuda, transfers 256 pages, others 4096"

// defaultSlots is the pool a kernel of kind k is checked on by default,
// on backend place p, for pages of pageSize tokens.
func defaultSlots(k protocol.Kernel, p arena.Place, pageSize int) int {
	switch k {
	case store.Name:
		if p.OnDevice() {
			return storeSlotsCUDA
		}
		return storeSlotsCPU
	case transfer.Name:
		return transferPages * pageSize
	}
	return readSlots
}

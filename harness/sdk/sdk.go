package sdk

import (
	"context"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// Variant is a named build of the kernel, usually a mutant that reproduces
// a real bug class. The harness selects it with --variant.
type Variant struct {
	Name string
	Doc  string
	// Correct marks a variant that behaves correctly but differently, a
	// deliberately slowed one say: a control for the mutant suite, not a
	// mutant.
	Correct bool
	// Kernel is the kernel the variant changes: "" for the store, "read"
	// or "transfer". The mutant suite runs each variant against its
	// kernel's properties.
	Kernel string
	// SlotBits, when not zero, is the variant's slot index width in place
	// of the plugin's (Plugin.SlotBits).
	SlotBits int
}

// Geometry is what the kernel's own code believes about a layout. The
// harness checks it against the layout before running a case: a kernel
// that computes bytes per token as an element count fails here first.
type Geometry struct {
	Layout        string
	BytesPerToken int
	BytesPerPage  int
	// Recipe is how the kernel quantizes the layout's fp8 fields: its
	// floor, x/s or x*(1/s), scale tolerance. Nil means the layout's
	// default recipe (eps 1e-4, x/s, scales within 1 ulp). The harness
	// judges the kernel's scales and codes against it, so a kernel with
	// eps 1e-8 that declares nothing fails on tiny rows, and passes once
	// it declares Recipe{Eps: new(1e-8)}.
	Recipe *layout.Recipe
}

// Plugin describes a kernel plugin.
type Plugin struct {
	Name     string
	Version  string
	Doc      string
	Variants []Variant
	// Geometry lists the layouts the kernel supports for a variant, head
	// dimension and page size.
	Geometry func(variant string, headDim, pageSize int) []Geometry
	// Kernel implements Storer (host shared memory), DeviceStorer (CUDA
	// device memory) or both, optionally DevicePreparer; Reader and
	// Transferer (and their device twins) for the other kinds; LayerLoader
	// and PageStorer, on either backend, for the load kind. Describe lists
	// the backends it can serve.
	Kernel any
	// SlotBits is the width of the slot indices the store kernel reads: 64
	// (also when 0) or 32, as engines pass int64 or int32 loc tensors. The
	// harness stages loc at that width; a variant may override it.
	SlotBits int
}

// Layout names a layout and its parameters.
type Layout struct {
	Name     string
	HeadDim  int
	PageSize int
}

// Pool is one KV-cache pool in the arena.
type Pool struct {
	Name   string
	Layout Layout
	Slots  int
	Base   int // offset of slot 0's page in its region
	Bytes  int
	Region int // the attach's region the pool lives in: 0 unless the harness spreads pools over memory spaces
}

// Padding is how padded rows mark themselves; see StoreCall.
type Padding = kvpb.Padding

// Padding conventions.
const (
	PadNone   = kvpb.Padding_PADDING_NONE
	PadCount  = kvpb.Padding_PADDING_COUNT
	PadSink   = kvpb.Padding_PADDING_SINK
	PadMinus1 = kvpb.Padding_PADDING_MINUS1
)

// StoreCall is one store: write Rows[i] into slot Loc[i] of Pool for the
// rows that are real. Rows Valid..Capacity-1 are padding: under PadCount
// their Loc holds stale slots, under PadSink slot 0, under PadMinus1 -1.
//
// Loc is always int64. When the kernel declares 32-bit slots, the harness
// stages them as int32: Loc32 is that staging, as the kernel's engine
// would hand it over, and Loc holds the same values sign-extended (a -1
// stays -1).
type StoreCall struct {
	Variant  string
	Pool     Pool
	Arena    []byte   // the whole arena, guards and staging included
	Capacity int      // rows in the batch
	Valid    int      // real rows
	Padding  Padding  //
	Rows     []uint16 // Capacity × HeadDim bf16 bit patterns
	Loc      []int64  // Capacity slots
	Loc32    []int32  // the staged 32-bit slots when SlotBits is 32, else nil
	SlotBits int      // 64 or 32: the width the harness staged
	Graph    bool     // the harness asked for CUDA-graph replay; CPU kernels ignore it
}

// Storer is a store kernel.
type Storer interface {
	Store(ctx context.Context, call *StoreCall) error
}

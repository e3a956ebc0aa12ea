package sdk

import (
	"google.golang.org/grpc"

	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/protocol"
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
	// Kernel is the kind of kernel the variant changes ("read",
	// "transfer", ...); "" is the plugin's first kind. The mutant suite
	// runs each variant against its kind's properties.
	Kernel string
	// Layouts are the layouts the variant's bug lives in, where the
	// mutant suite checks it instead of the run's (an engine cache's
	// mistake, on the engine layouts a default run leaves out); nil: the
	// run's.
	Layouts []string
	// SlotBits, when not zero, is the variant's slot index width in place
	// of the plugin's (Plugin.SlotBits).
	SlotBits int
	// Addressing, when set, is how the variant's store takes its calls,
	// in place of the plugin's (Plugin.Addressing).
	Addressing []kvpb.Addressing
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
	// PadPolicy is what the kernel leaves in the layout's pad bytes, over
	// the layout's own policy: layout.PadKeep for a kernel that never
	// writes them (the harness then checks that it does not), PadZero
	// for one that zeroes them; "" keeps the layout's.
	PadPolicy layout.PadPolicy
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
	// GeometryHeads, when set, replaces Geometry for a plugin whose
	// layouts hold several KV heads per token (the engines' K and V
	// caches): their bytes per token depend on the head count.
	GeometryHeads func(variant string, heads, headDim, pageSize int) []Geometry
	// Kernel is the kernel value: it implements the interfaces of every
	// kind in Kinds (store.Storer, read.DeviceReader, ...), on host memory,
	// CUDA memory or both, and optionally DevicePreparer. Describe lists
	// the backends it serves.
	Kernel any
	// Kinds are the kernel kinds the plugin serves, each from its SDK
	// package (store.Kind, read.Kind, ...), in the order Describe lists
	// them: the first is the kind of a variant that names none. Each kind
	// registers its gRPC service beside the base one; what a plugin
	// registers is what it advertises.
	Kinds []Kind
	// SlotBits is the width of the slot indices the store kernel reads: 64
	// (also when 0) or 32, as engines pass int64 or int32 loc tensors. The
	// harness stages loc at that width; a variant may override it.
	SlotBits int
	// Addressing is how the store kernel takes its calls: by slot list
	// (kvpb.Addressing_ADDRESSING_SLOTS), by page table
	// (ADDRESSING_PAGE_TABLE: Call.Table), or both; nil is slot lists
	// only. A variant may override it.
	Addressing []kvpb.Addressing
	// ReadNonFinite is what the read kernel does with ±Inf and NaN in a
	// query or in a key it scores: layout.Contained for a kernel whose
	// requests share nothing (a request that holds one may answer any
	// ranking of its own list, and every other request of the call stays
	// exact); "" declares nothing, and the harness then gives reads finite
	// keys and queries only.
	ReadNonFinite layout.NonFinite
}

// A Kind is one kernel kind as its SDK package serves it (store.Kind,
// read.Kind, transfer.Kind, load.Kind, pdasync.Kind): which of a kernel's
// interfaces are the kind's, and the kind's gRPC service. The base SDK
// knows no kind by name; a new kind is a package that implements Kind.
type Kind interface {
	// Serves reports whether kernel implements the kind on host memory
	// and on CUDA memory.
	Serves(kernel any) (host, device bool)
	// Register registers the kind's service on r; its handlers work on
	// s's attachment, under s's lock.
	Register(r grpc.ServiceRegistrar, s *Server)
}

// A StreamHolder is a Kind whose SDK holds CUDA streams behind waits
// (load's latch, pdasync's gates): a plugin serving one gets CUDA's
// widest hardware queues (see widenDeviceQueues).
type StreamHolder interface {
	Kind
	HoldsStreams()
}

// Layout names a layout and its parameters.
type Layout struct {
	Name     string
	HeadDim  int
	PageSize int
	Heads    int // KV heads per token of each tensor; 1 for a layout of one record per slot
}

// geometries is what the plugin declares for a variant and layout
// dimensions.
func (p *Plugin) geometries(variant string, heads, headDim, pageSize int) []Geometry {
	if p.GeometryHeads != nil {
		return p.GeometryHeads(variant, max(heads, 1), headDim, pageSize)
	}
	if p.Geometry == nil {
		return nil
	}
	return p.Geometry(variant, headDim, pageSize)
}

// Pool is one KV-cache pool in the arena.
type Pool struct {
	Name   string
	Layout Layout
	Slots  int
	Base   int // offset of slot 0's page in its region
	Bytes  int
	Region int // the attach's region the pool lives in: 0 unless the harness spreads pools over memory spaces
	// Buffer places the pool in a multi-buffer KV cache on one side of a
	// transfer (the transfer and pdasync kinds); nil for other kinds.
	Buffer *PoolBuffer
}

// The sides of a transfer: PoolBuffer.Side.
const (
	SideSrc = "src" // the prefill server's pools, which are read
	SideDst = "dst" // the decode server's, which are written
)

// PoolBuffer is one side's pool of a buffer of a multi-buffer KV cache
// (a layer's KV, its index-K, a compressor state).
type PoolBuffer struct {
	Side  string // SideSrc or SideDst
	Layer int
	Name  string // the buffer, the same on both sides: "L0.kv"
	// Alloc names the allocation the buffer is carved from; "" when it
	// owns one. Buffers of a side with the same AllocKey share one
	// registered base address, as tensors shared by two layer groups do.
	Alloc string
	// Shift is the buffer's page table: a room's page p lives in physical
	// page (p + Shift) mod pages of this buffer.
	Shift int
}

// AllocKey is the allocation the buffer belongs to.
func (b PoolBuffer) AllocKey() string {
	if b.Alloc != "" {
		return b.Alloc
	}
	return b.Name
}

// Pages is the number of pages of the pool: its slots, a partial last page
// included.
func (p Pool) Pages() int { return (p.Slots + p.Layout.PageSize - 1) / p.Layout.PageSize }

// NameOf is the name of the kind a service serves (protocol.KernelOf):
// what Describe lists and a variant's Kernel says. Each kind's package
// derives its Name from its service this way.
func NameOf(service *grpc.ServiceDesc) string {
	k, _ := protocol.KernelOf(service.ServiceName)
	return string(k)
}

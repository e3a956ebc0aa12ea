package transfer

import "github.com/kvharness/kvharness/harness/pd"

// The geometry, descriptors, buffer pools and digests of a transfer are
// the prefill → decode kit's (package pd), which the asynchronous transfer
// kind shares; these names keep this kind's API as it was.
type (
	Geometry    = pd.Geometry
	Buffer      = pd.Buffer
	Descriptor  = pd.Descriptor
	BufferPools = pd.BufferPools
	RoomDigest  = pd.RoomDigest
)

// The sides and bounds of a transfer (see package pd).
const (
	SideSrc            = pd.SideSrc
	SideDst            = pd.SideDst
	MaxTransferBuffers = pd.MaxTransferBuffers
	MaxTransferPages   = pd.MaxTransferPages
	MaxTransferRooms   = pd.MaxTransferRooms
	DigestSize         = pd.DigestSize
)

// DefaultGeometry is pd.DefaultGeometry: a DeepSeek-V4-like cache of
// layers layers.
func DefaultGeometry(layers, pages int) Geometry { return pd.DefaultGeometry(layers, pages) }

// PageList is pd.PageList.
func PageList(pages []int64, max int) string { return pd.PageList(pages, max) }

// DigestsMatch is pd.DigestsMatch.
func DigestsMatch(ds []RoomDigest) bool { return pd.DigestsMatch(ds) }

package read

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/target"
)

// readStaging is where a read's inputs and outputs live, as offsets from
// the staging base, each 256-byte aligned and sized for the maxima.
type readStaging struct {
	base                                         int
	queries, indptr, tokens, outSlots, outScores int
	size                                         int
}

func planReadStaging(c Config) readStaging {
	var s readStaging
	next := func(n int) int {
		at := s.size
		s.size += (n + pool.Alignment - 1) / pool.Alignment * pool.Alignment
		return at
	}
	s.queries = next(c.MaxRequests * c.Layout.RowBytes())
	s.indptr = next(8 * (c.MaxRequests + 1))
	s.tokens = next(8 * c.MaxTokens)
	s.outSlots = next(8 * c.MaxRequests * c.MaxK)
	s.outScores = next(4 * c.MaxRequests * c.MaxK)
	return s
}

// request is the Case RPC of a case.
func (s readStaging) request(c *Case) *kvpb.ReadRequest {
	at := func(off int) uint64 { return uint64(s.base + off) }
	return &kvpb.ReadRequest{Pool: 0, Requests: uint32(len(c.Requests)), K: uint32(c.K),
		QueriesOffset: at(s.queries), IndptrOffset: at(s.indptr), TokensOffset: at(s.tokens),
		OutSlotsOffset: at(s.outSlots), OutScoresOffset: at(s.outScores)}
}

// inputs is a case's staged input: queries, list bounds, tokens.
func (s readStaging) inputs(rc *Oracle) []target.Segment {
	var q []byte
	for _, row := range rc.Queries() {
		q = append(q, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(row))), 2*len(row))...)
	}
	indptr := binary.LittleEndian.AppendUint64(nil, 0)
	var tokens []byte
	for _, r := range rc.Case.Requests {
		for _, slot := range r.Tokens {
			tokens = binary.LittleEndian.AppendUint64(tokens, uint64(slot))
		}
		indptr = binary.LittleEndian.AppendUint64(indptr, uint64(len(tokens)/8))
	}
	return []target.Segment{{Name: "queries", Off: s.base + s.queries, Data: q}, {Name: "indptr", Off: s.base + s.indptr, Data: indptr}, {Name: "tokens", Off: s.base + s.tokens, Data: tokens}}
}

// poisonByte fills the out windows before a call, so a kernel that leaves
// an entry unwritten is seen: 0xa5… is neither slot -1 nor a NaN.
const poisonByte = 0xa5

// outputs are a case's out windows, filled with poison.
func (s readStaging) outputs(c *Case) []target.Segment {
	n := len(c.Requests) * c.K
	fill := func(b []byte) []byte {
		for i := range b {
			b[i] = poisonByte
		}
		return b
	}
	return []target.Segment{{Name: "out slots", Off: s.base + s.outSlots, Data: fill(make([]byte, 8*n))},
		{Name: "out scores", Off: s.base + s.outScores, Data: fill(make([]byte, 4*n))}}
}

// decode reads the out windows' bytes as a Output.
func decodeOutput(slots, scores []byte) Output {
	out := Output{Slots: make([]int64, len(slots)/8), Scores: make([]float32, len(scores)/4)}
	for i := range out.Slots {
		out.Slots[i] = int64(binary.LittleEndian.Uint64(slots[8*i:]))
	}
	for i := range out.Scores {
		out.Scores[i] = math.Float32frombits(binary.LittleEndian.Uint32(scores[4*i:]))
	}
	return out
}

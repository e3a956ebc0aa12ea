package workload

import "encoding/binary"

// Stream reads fuzz bytes as a stream of choices. Reading past the end
// yields zeros, so every input, empty included, decodes to a valid case:
// each kind's decoder documents its format.
type Stream struct {
	data []byte
	pos  int
}

// NewStream reads data.
func NewStream(data []byte) *Stream { return &Stream{data: data} }

// Byte is the next byte, 0 past the end.
func (s *Stream) Byte() byte {
	if s.pos >= len(s.data) {
		return 0
	}
	s.pos++
	return s.data[s.pos-1]
}

// Uint is the next n bytes (at most 8) as a little-endian number.
func (s *Stream) Uint(n int) uint64 {
	var b [8]byte
	for i := range n {
		b[i] = s.Byte()
	}
	return binary.LittleEndian.Uint64(b[:])
}

// Slot-choice rules: the first byte of a slot choice picks one, so a fuzz
// mutator reaches the places kernels get wrong with single-byte changes.
const (
	ChoiceLowest    = iota // the lowest usable slot
	ChoiceLast             // the last slot
	ChoiceEdge             // a page edge
	ChoiceNeighbour        // a neighbour of the previous slot
	ChoiceRaw              // a raw slot
	NumChoices
)

// EdgeSlot is the ChoiceEdge rule: the first or the last slot (by the
// page's parity) of a page the stream picks among slots slots, in pages
// of pageSize.
func (s *Stream) EdgeSlot(slots int, pageSize int64) int64 {
	page := int64(s.Uint(2)) % (int64(slots-1)/pageSize + 1)
	return page*pageSize + []int64{0, pageSize - 1}[page%2]
}

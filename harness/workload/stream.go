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

// Slot applies slot-choice rule (one of the Choice rules; a kind's own
// rules come after them) over slots slots in pages of pageSize tokens:
// lowest, the lowest usable slot; the last slot; the first or the last
// slot (by the page's parity) of a page the stream picks; one past the
// last slot of chosen, those chosen so far (lowest when none); else a
// raw slot from the stream. The result may be out of range or taken,
// which the caller fixes.
func (s *Stream) Slot(rule byte, slots int, pageSize, lowest int64, chosen []int64) int64 {
	switch rule {
	case ChoiceLowest:
		return lowest
	case ChoiceLast:
		return int64(slots - 1)
	case ChoiceEdge:
		page := int64(s.Uint(2)) % (int64(slots-1)/pageSize + 1)
		return page*pageSize + []int64{0, pageSize - 1}[page%2]
	case ChoiceNeighbour:
		if len(chosen) == 0 {
			return lowest
		}
		return chosen[len(chosen)-1] + 1
	}
	return int64(s.Uint(4))
}

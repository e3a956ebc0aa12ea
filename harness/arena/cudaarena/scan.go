package cudaarena

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/kvharness/kvharness/harness/cuda"
)

const (
	// initialListCap block indices fit the first scan's list; a scan that
	// finds more grows the list and runs again.
	initialListCap = 4096
	// gatherChunk changed blocks are packed by a scan, or gathered by list
	// when a scan finds more, and fetched per round.
	gatherChunk = 4096
	// entryBytes is background.cu's ENTRY_BYTES: a changed block, a bit
	// per byte that differs, and the block's index.
	entryBytes = 304
	// maxPieces pieces (2.5 MiB) are restored per launch of restore_pieces.
	maxPieces = 1 << 16
)

// scanBuffers are the device buffers Changed reuses between calls.
type scanBuffers struct {
	count    cuda.Ptr // one uint32: blocks found by the last scan
	list     cuda.Ptr // capacity uint32 block indices
	capacity int
	packed   cuda.Ptr // gatherChunk entries (or blocks, when gathered by list)
	host     []byte   // host copy of packed

	pieces   cuda.Ptr // pieceCap pieces for restore_pieces
	pieceCap int

	windows windowBuffers // ChangedIn's
}

func (s *scanBuffers) init(dev *cuda.Device) error {
	var err error
	if s.count, err = dev.Alloc(4); err != nil {
		return fmt.Errorf("cuda arena scan counter: %w", err)
	}
	if err = s.grow(dev, initialListCap); err != nil {
		return err
	}
	if s.packed, err = dev.Alloc(gatherChunk * entryBytes); err != nil {
		return fmt.Errorf("cuda arena gather buffer: %w", err)
	}
	s.host = make([]byte, gatherChunk*entryBytes)
	return nil
}

// grow replaces the list with one that holds at least n indices.
func (s *scanBuffers) grow(dev *cuda.Device, n int) error {
	return realloc(dev, &s.list, &s.capacity, n, initialListCap, 4, "cuda arena scan list", "blocks")
}

// growPieces makes room for n pieces, doubling from 256.
func (s *scanBuffers) growPieces(dev *cuda.Device, n int) error {
	if n <= s.pieceCap {
		return nil
	}
	return realloc(dev, &s.pieces, &s.pieceCap, n, 256, 8*pieceWords, "cuda arena restore list", "ranges")
}

// realloc replaces the device array *p of *capacity elements with one of
// elemBytes-wide elements that holds at least n: first doubled until it
// does, so that capacities stay powers of two times first. what and unit
// name the array and its elements in errors.
func realloc(dev *cuda.Device, p *cuda.Ptr, capacity *int, n, first, elemBytes int, what, unit string) error {
	c := first
	for c < n {
		c *= 2
	}
	if *p != 0 {
		if err := dev.Free(*p); err != nil {
			return fmt.Errorf("free %s: %w", what, err)
		}
		*p, *capacity = 0, 0
	}
	q, err := dev.Alloc(elemBytes * c)
	if err != nil {
		return fmt.Errorf("%s of %d %s: %w", what, c, unit, err)
	}
	*p, *capacity = q, c
	return nil
}

func (s *scanBuffers) free(dev *cuda.Device) error {
	var errs []error
	for _, p := range []*cuda.Ptr{&s.count, &s.list, &s.packed, &s.pieces, &s.windows.pieces, &s.windows.packed} {
		if *p != 0 {
			errs = append(errs, dev.Free(*p))
			*p = 0
		}
	}
	s.windows.pieceCap, s.windows.packedCap = 0, 0
	return errors.Join(errs...)
}

// readCount fetches the scan counter once st's scans are done.
func (s *scanBuffers) readCount(st *cuda.Stream) (int, error) {
	var c [4]byte
	if err := st.DtoHAsync(c[:], s.count); err != nil {
		return 0, fmt.Errorf("read cuda arena scan count: %w", err)
	}
	return int(binary.LittleEndian.Uint32(c[:])), nil
}

// readList fetches the first n listed blocks, in the order found.
func (s *scanBuffers) readList(st *cuda.Stream, n int) ([]uint32, error) {
	raw := make([]byte, 4*n)
	if err := st.DtoHAsync(raw, s.list); err != nil {
		return nil, fmt.Errorf("read cuda arena scan list: %w", err)
	}
	blocks := make([]uint32, n)
	for i := range blocks {
		blocks[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return blocks, nil
}

// writeSorted sorts blocks, drops duplicates (pieces that share a block
// both report it) and queues them on st as the list, so that gathers pack
// blocks in arena order.
func (s *scanBuffers) writeSorted(st *cuda.Stream, blocks []uint32) ([]uint32, error) {
	slices.Sort(blocks)
	blocks = slices.Compact(blocks)
	raw := make([]byte, 4*len(blocks))
	for i, b := range blocks {
		binary.LittleEndian.PutUint32(raw[4*i:], b)
	}
	if err := st.HtoDAsync(s.list, raw); err != nil {
		return nil, fmt.Errorf("write sorted cuda arena scan list: %w", err)
	}
	return blocks, nil
}

package cudapool

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
	// gatherChunk blocks (1 MiB) are packed and fetched per round.
	gatherChunk = 4096
)

// scanBuffers are the device buffers Changed reuses between calls.
type scanBuffers struct {
	count    cuda.Ptr // one uint32: blocks found by the last scan
	list     cuda.Ptr // capacity uint32 block indices
	capacity int
	packed   cuda.Ptr // gatherChunk blocks packed back to back
	host     []byte   // host copy of packed
}

func (s *scanBuffers) init(dev *cuda.Device) error {
	var err error
	if s.count, err = dev.Alloc(4); err != nil {
		return fmt.Errorf("cuda arena scan counter: %w", err)
	}
	if err = s.grow(dev, initialListCap); err != nil {
		return err
	}
	if s.packed, err = dev.Alloc(gatherChunk * blockBytes); err != nil {
		return fmt.Errorf("cuda arena gather buffer: %w", err)
	}
	s.host = make([]byte, gatherChunk*blockBytes)
	return nil
}

// grow replaces the list with one that holds at least n indices.
func (s *scanBuffers) grow(dev *cuda.Device, n int) error {
	capacity := initialListCap
	for capacity < n {
		capacity *= 2
	}
	if s.list != 0 {
		if err := dev.Free(s.list); err != nil {
			return fmt.Errorf("free cuda arena scan list: %w", err)
		}
		s.list, s.capacity = 0, 0
	}
	p, err := dev.Alloc(4 * capacity)
	if err != nil {
		return fmt.Errorf("cuda arena scan list of %d blocks: %w", capacity, err)
	}
	s.list, s.capacity = p, capacity
	return nil
}

func (s *scanBuffers) free(dev *cuda.Device) error {
	var errs []error
	for _, p := range []*cuda.Ptr{&s.count, &s.list, &s.packed} {
		if *p != 0 {
			errs = append(errs, dev.Free(*p))
			*p = 0
		}
	}
	return errors.Join(errs...)
}

// readCount fetches the scan counter.
func (s *scanBuffers) readCount(dev *cuda.Device) (int, error) {
	var c [4]byte
	if err := dev.DtoH(c[:], s.count); err != nil {
		return 0, fmt.Errorf("read cuda arena scan count: %w", err)
	}
	return int(binary.LittleEndian.Uint32(c[:])), nil
}

// sortList fetches the first n listed blocks, sorts them, drops duplicates
// (pieces that share a block both report it) and writes the sorted list
// back, so the gather packs blocks in arena order.
func (s *scanBuffers) sortList(dev *cuda.Device, n int) ([]uint32, error) {
	raw := make([]byte, 4*n)
	if err := dev.DtoH(raw, s.list); err != nil {
		return nil, fmt.Errorf("read cuda arena scan list: %w", err)
	}
	blocks := make([]uint32, n)
	for i := range blocks {
		blocks[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	slices.Sort(blocks)
	blocks = slices.Compact(blocks)
	raw = raw[:4*len(blocks)]
	for i, b := range blocks {
		binary.LittleEndian.PutUint32(raw[4*i:], b)
	}
	if err := dev.HtoD(s.list, raw); err != nil {
		return nil, fmt.Errorf("write sorted cuda arena scan list: %w", err)
	}
	return blocks, nil
}

package cudapool

import (
	"bytes"
	"fmt"

	"github.com/kvharness/kvharness/harness/pool"
)

// Changed implements pool.Memory. The arena is scanned on the device; only
// the changed 256-byte blocks come back to the host, where they are compared
// byte by byte with the baseline.
func (m *Memory) Changed(w pool.Window) ([]pool.Window, error) {
	if err := m.check(w.Off, w.Len); err != nil {
		return nil, err
	}
	if w.Len == 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	blocks, err := m.changedBlocks(w)
	if err != nil || len(blocks) == 0 {
		return nil, err
	}
	return m.diffBlocks(w, blocks)
}

// changedBlocks lists, sorted, the blocks of w that differ from the
// baseline, rescanning with a longer list if the first one overflowed.
func (m *Memory) changedBlocks(w pool.Window) ([]uint32, error) {
	pieces := m.bl.pieces(w)
	for {
		n, err := m.scan(pieces)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		if n <= m.scratch.capacity {
			return m.scratch.sortList(m.dev, n)
		}
		if err := m.scratch.grow(m.dev, n); err != nil {
			return nil, err
		}
	}
}

// scan runs the diff kernel over each piece and returns how many blocks it
// found (possibly more than the list holds).
func (m *Memory) scan(pieces []piece) (int, error) {
	s := &m.scratch
	if err := m.dev.Memset8(s.count, 0, 4); err != nil {
		return 0, fmt.Errorf("clear cuda arena scan count: %w", err)
	}
	for _, p := range pieces {
		if err := m.k.diffRange(m.base, p, s.count, s.list, s.capacity); err != nil {
			return 0, err
		}
	}
	return s.readCount(m.dev)
}

// diffBlocks fetches the listed blocks a chunk at a time and turns them into
// maximal changed ranges of w, in arena order.
func (m *Memory) diffBlocks(w pool.Window, blocks []uint32) ([]pool.Window, error) {
	var out []pool.Window
	want := make([]byte, blockBytes)
	for start := 0; start < len(blocks); start += gatherChunk {
		chunk := blocks[start:min(start+gatherChunk, len(blocks))]
		packed, err := m.gather(start, len(chunk))
		if err != nil {
			return nil, err
		}
		for i, b := range chunk {
			blockOff := int(b) * blockBytes
			lo, hi := max(blockOff, w.Off), min(blockOff+blockBytes, w.End())
			got := packed[i*blockBytes+lo-blockOff : i*blockBytes+hi-blockOff]
			m.bl.expected(want[:hi-lo], lo)
			out = appendDiff(out, got, want[:hi-lo], lo)
		}
	}
	return out, nil
}

// gather packs n listed blocks, from list position start, and fetches them.
func (m *Memory) gather(start, n int) ([]byte, error) {
	s := &m.scratch
	if err := m.k.gatherBlocks(m.base, s.list.Add(4*start), n, s.packed); err != nil {
		return nil, err
	}
	if err := m.dev.DtoH(s.host[:n*blockBytes], s.packed); err != nil {
		return nil, fmt.Errorf("fetch changed cuda arena blocks: %w", err)
	}
	return s.host[:n*blockBytes], nil
}

// appendDiff adds the bytes where got differs from want, got being arena
// bytes from off, to out, extending its last range when they touch so that
// ranges stay maximal across blocks.
func appendDiff(out []pool.Window, got, want []byte, off int) []pool.Window {
	if bytes.Equal(got, want) {
		return out
	}
	for i := range got {
		if got[i] == want[i] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End() == off+i {
			out[n-1].Len++
		} else {
			out = append(out, pool.Window{Off: off + i, Len: 1})
		}
	}
	return out
}

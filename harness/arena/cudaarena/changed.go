package cudaarena

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/kvharness/kvharness/harness/arena/internal/baseline"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
)

// Changed implements pool.Memory. The arena is scanned on the device; only
// the changed 256-byte blocks come back to the host, each with a bit per
// byte that differs from the baseline (see collect).
func (m *Memory) Changed(w pool.Window) ([]pool.Window, error) {
	ws, _, err := m.changed(w, false)
	return ws, err
}

// ChangedBytes is Changed with the bytes each range now holds, back to
// back: what a run left, fetched with the scan instead of by a read per
// range afterwards.
func (m *Memory) ChangedBytes(w pool.Window) ([]pool.Window, []byte, error) {
	return m.changed(w, true)
}

// changed scans w in one trip to the device thread, keeping the changed
// bytes when asked.
func (m *Memory) changed(w pool.Window, keep bool) (ws []pool.Window, got []byte, err error) {
	if err := m.check(w.Off, w.Len); err != nil {
		return nil, nil, err
	}
	if w.Len == 0 {
		return nil, nil, nil
	}
	err = m.dev.Do(func(c *cuda.Ctx) error {
		m.mu.Lock() // always after the device thread: see Batch
		defer m.mu.Unlock()
		d := diff{keep: keep}
		for _, part := range m.clip(w) { // a sparse arena scans what has memory
			if err := m.collect(c, part, &d); err != nil {
				return err
			}
		}
		ws, got = d.ranges, d.bytes
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return ws, got, nil
}

// collect scans w and adds its changed ranges to d. The scan packs the
// first gatherChunk changed blocks as it finds them, with a bit per byte
// that differs, so a run's changes come back in two copies (the count,
// the entries) and the host compares nothing; more blocks than that are
// fetched by sorted list, a chunk at a time, and compared here; more than
// the list holds grow it and scan again.
func (m *Memory) collect(c *cuda.Ctx, w pool.Window, d *diff) error {
	pieces := m.bl.Pieces(w)
	s := &m.scratch
	for {
		n, err := m.scan(c, pieces)
		if err != nil || n == 0 {
			return err
		}
		if n > s.capacity {
			if err := s.grow(m.dev, n); err != nil {
				return err
			}
			continue
		}
		if n > gatherChunk {
			blocks, err := s.readList(m.stream, n)
			if err != nil {
				return err
			}
			return m.gatherSorted(w, blocks, d)
		}
		return m.fetchEntries(s.host[:n*entryBytes], s.packed, d)
	}
}

// fetchEntries copies the packed entries at packed into host, which holds
// exactly the scan's, and adds their changed bytes to d.
func (m *Memory) fetchEntries(host []byte, packed cuda.Ptr, d *diff) error {
	if err := m.toHost(host, packed); err != nil {
		return fmt.Errorf("fetch changed cuda arena blocks: %w", err)
	}
	for _, e := range mergeEntries(host) {
		d.addMasked(e.data, e.mask, e.block*blockBytes)
	}
	return nil
}

// entry is one changed block as a scan packed it.
type entry struct {
	block int
	data  []byte    // the block's bytes
	mask  [4]uint64 // bit k of word q: byte 64q+k differs from the baseline
}

// mergeEntries decodes packed entries and returns them in block order, one
// per block: pieces that share a block each report it, with the bits of
// their own bytes, so the masks of a block's entries are joined.
func mergeEntries(packed []byte) []entry {
	n := len(packed) / entryBytes
	order := make([]uint64, n) // block<<32 | entry: sorted, the entries in block order
	for i := range order {
		order[i] = uint64(binary.LittleEndian.Uint32(packed[i*entryBytes+blockBytes+32:]))<<32 | uint64(i)
	}
	slices.Sort(order)
	out := make([]entry, 0, n)
	for _, o := range order {
		e := packed[int(uint32(o))*entryBytes:]
		var mask [4]uint64
		for q := range mask {
			mask[q] = binary.LittleEndian.Uint64(e[blockBytes+8*q:])
		}
		block := int(o >> 32)
		if k := len(out); k > 0 && out[k-1].block == block {
			for q := range mask {
				out[k-1].mask[q] |= mask[q]
			}
			continue
		}
		out = append(out, entry{block: block, data: e[:blockBytes], mask: mask})
	}
	return out
}

// scan queues the diff kernels over each piece, whole blocks by the fast
// kernel where the piece's window starts on a word, and returns how many
// blocks they found (possibly more than the list holds).
func (m *Memory) scan(c *cuda.Ctx, pieces []baseline.Piece) (int, error) {
	s := &m.scratch
	if err := c.Memset8Async(m.stream, s.count, 0, 4); err != nil {
		return 0, fmt.Errorf("clear cuda arena scan count: %w", err)
	}
	to := scanTo{count: s.count, list: s.list, capacity: s.capacity, packed: s.packed, packedCap: gatherChunk}
	for _, p := range pieces {
		if err := m.scanPiece(p, to); err != nil {
			return 0, err
		}
	}
	return s.readCount(m.stream)
}

// scanPiece splits a piece into its ragged ends, for the general kernel,
// and its whole blocks, for the fast one.
func (m *Memory) scanPiece(p baseline.Piece, to scanTo) error {
	b0, b1 := (p.Off+blockBytes-1)/blockBytes, p.End()/blockBytes
	if (p.Filled && p.Origin%8 != 0) || b0 >= b1 {
		return m.k.diffRange(m.base, p, p.Off, p.End(), to)
	}
	if p.Off < b0*blockBytes {
		if err := m.k.diffRange(m.base, p, p.Off, b0*blockBytes, to); err != nil {
			return err
		}
	}
	if err := m.k.diffWhole(m.base, p, b0, b1, to); err != nil {
		return err
	}
	if b1*blockBytes < p.End() {
		return m.k.diffRange(m.base, p, b1*blockBytes, p.End(), to)
	}
	return nil
}

// gatherSorted handles a scan that found more blocks than it packed: the
// list is sorted and written back, then the blocks are packed and fetched
// a chunk at a time.
func (m *Memory) gatherSorted(w pool.Window, blocks []uint32, d *diff) error {
	blocks, err := m.scratch.writeSorted(m.stream, blocks)
	if err != nil {
		return err
	}
	for start := 0; start < len(blocks); start += gatherChunk {
		chunk := blocks[start:min(start+gatherChunk, len(blocks))]
		packed, err := m.gather(start, len(chunk))
		if err != nil {
			return err
		}
		for i, b := range chunk {
			m.diffBlock(w, int(b), packed[i*blockBytes:(i+1)*blockBytes], d)
		}
	}
	return nil
}

// diffBlock adds to d the changes in block b (its bytes in got) that lie
// inside w.
func (m *Memory) diffBlock(w pool.Window, b int, got []byte, d *diff) {
	blockOff := b * blockBytes
	lo, hi := max(blockOff, w.Off), min(blockOff+blockBytes, w.End())
	want := m.want[:hi-lo]
	m.bl.Expected(want, lo)
	d.add(got[lo-blockOff:hi-blockOff], want, lo)
}

// gather packs n listed blocks, from list position start, and fetches them.
func (m *Memory) gather(start, n int) ([]byte, error) {
	s := &m.scratch
	if err := m.k.gatherBlocks(m.base, s.list.Add(4*start), n, s.packed); err != nil {
		return nil, err
	}
	if err := m.toHost(s.host[:n*blockBytes], s.packed); err != nil {
		return nil, fmt.Errorf("fetch changed cuda arena blocks: %w", err)
	}
	return s.host[:n*blockBytes], nil
}

// diff accumulates the maximal ranges where arena bytes differ from their
// baseline, and, when keep is set, the bytes now in them, back to back.
type diff struct {
	keep   bool
	ranges []pool.Window
	bytes  []byte
}

// add takes got, arena bytes from off, against want, their baseline.
func (d *diff) add(got, want []byte, off int) {
	if bytes.Equal(got, want) {
		return
	}
	for i := 0; i < len(got); {
		if got[i] == want[i] {
			i++
			continue
		}
		j := i + 1
		for j < len(got) && got[j] != want[j] {
			j++
		}
		d.run(off+i, got[i:j])
		i = j
	}
}

// addMasked takes the 256 bytes of a block at off, with a bit set for each
// byte that differs from its baseline (bit k of mask[q]: byte 64q+k).
func (d *diff) addMasked(got []byte, mask [4]uint64, off int) {
	if mask == [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)} {
		d.run(off, got[:blockBytes]) // the whole block: a row a kernel wrote
		return
	}
	for q, m := range mask {
		for m != 0 {
			s := bits.TrailingZeros64(m)
			n := bits.TrailingZeros64(^(m >> s)) // the run of ones from s; 64 when all are
			at := 64*q + s
			d.run(off+at, got[at:at+n])
			if n == 64 {
				m = 0
			} else {
				m &^= (1<<n - 1) << s
			}
		}
	}
}

// run adds changed bytes b at off, extending the last range when it ends
// there, so that ranges stay maximal across blocks.
func (d *diff) run(off int, b []byte) {
	d.ranges = pool.Extend(d.ranges, off, len(b))
	if d.keep {
		d.bytes = append(d.bytes, b...)
	}
}

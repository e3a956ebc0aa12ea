package cudaarena

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/arena/internal/baseline"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
)

// maxWindowEntries changed blocks, at most, come back from one window scan
// in a single copy (76 MiB); a scan that finds more is redone window by
// window, as Changed scans.
const maxWindowEntries = 1 << 18

// windowBuffers are the device buffers ChangedIn reuses between calls,
// allocated on its first: the pieces of the windows, and room for an
// entry per changed block.
type windowBuffers struct {
	pieces    cuda.Ptr
	pieceCap  int
	packed    cuda.Ptr
	packedCap int
	host      []byte // host copy of packed
}

func (s *windowBuffers) free(dev *cuda.Device) error {
	var err error
	for _, p := range []*cuda.Ptr{&s.pieces, &s.packed} {
		if *p != 0 {
			if e := dev.Free(*p); e != nil && err == nil {
				err = e
			}
			*p = 0
		}
	}
	s.pieceCap, s.packedCap = 0, 0
	return err
}

// ChangedIn implements arena.WindowScanner: the maximal changed ranges
// inside ws, which must be sorted and neither overlap nor touch, with the
// bytes they hold now. However many windows a case's rows point at, they
// are scanned by one launch of diff_pieces (a grid each for windows larger
// than bigPiece) and their changed blocks come back in one copy: a case's
// scan costs a trip to the device, not a trip per window.
func (m *Memory) ChangedIn(ws []pool.Window) ([]pool.Window, []byte, error) {
	for _, w := range ws {
		if err := m.check(w.Off, w.Len); err != nil {
			return nil, nil, err
		}
	}
	d := diff{keep: true}
	err := m.dev.Do(func(c *cuda.Ctx) error {
		m.mu.Lock() // always after the device thread: see Batch
		defer m.mu.Unlock()
		return m.collectIn(c, ws, &d)
	})
	if err != nil {
		return nil, nil, err
	}
	return d.ranges, d.bytes, nil
}

// collectIn adds the changed ranges inside ws to d: small pieces by one
// diff_pieces launch, large ones by a grid each, all counted and packed
// together; a scan that finds more blocks than the buffer holds grows it
// and scans again.
func (m *Memory) collectIn(c *cuda.Ctx, ws []pool.Window, d *diff) error {
	var small, big []baseline.Piece
	for _, w := range ws {
		for _, p := range m.bl.Pieces(w) {
			switch {
			case p.Len == 0:
			case p.Len <= bigPiece:
				small = append(small, p)
			default:
				big = append(big, p)
			}
		}
	}
	if len(small)+len(big) == 0 {
		return nil
	}
	s := &m.scratch.windows
	if len(small) > s.pieceCap {
		if err := realloc(m.dev, &s.pieces, &s.pieceCap, len(small), 256, 8*pieceWords, "cuda arena window list", "pieces"); err != nil {
			return err
		}
	}
	if len(small) > 0 {
		if err := m.dev.HtoD(s.pieces, encodePieces(small)); err != nil {
			return fmt.Errorf("upload %d arena windows to scan: %w", len(small), err)
		}
	}
	for {
		n, err := m.scanIn(c, small, big)
		if err != nil || n == 0 {
			return err
		}
		if n > maxWindowEntries {
			for _, w := range ws {
				if err := m.collect(c, w, d); err != nil {
					return err
				}
			}
			return nil
		}
		if n > s.packedCap {
			if err := realloc(m.dev, &s.packed, &s.packedCap, n, gatherChunk, entryBytes, "cuda arena window entries", "blocks"); err != nil {
				return err
			}
			s.host = make([]byte, s.packedCap*entryBytes)
			continue
		}
		return m.fetchEntries(s.host[:n*entryBytes], s.packed, d)
	}
}

// scanIn queues the scans of the uploaded small pieces and of each big one
// and returns how many changed blocks they found, packed as far as the
// entry buffer has room.
func (m *Memory) scanIn(c *cuda.Ctx, small, big []baseline.Piece) (int, error) {
	s := &m.scratch
	if err := c.Memset8Async(nil, s.count, 0, 4); err != nil {
		return 0, fmt.Errorf("clear cuda arena scan count: %w", err)
	}
	to := scanTo{count: s.count, list: s.list, capacity: s.capacity, packed: s.windows.packed, packedCap: s.windows.packedCap}
	if len(small) > 0 {
		if err := m.k.diffPieces(m.base, s.windows.pieces, len(small), to); err != nil {
			return 0, err
		}
	}
	for _, p := range big {
		if err := m.scanPiece(p, to); err != nil {
			return 0, err
		}
	}
	return s.readCount(m.dev)
}

package cudaarena

import (
	"fmt"
	"math/bits"

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
}

// ChangedIn implements arena.WindowScanner: the maximal changed ranges
// inside ws, which must be sorted and neither overlap nor touch, with the
// bytes they hold now. Windows close together are scanned as one span
// (spanGap). However many windows a case's rows point at, they
// are scanned by one launch of diff_pieces (a grid each for windows larger
// than bigPiece) and their changed blocks come back in one copy: a case's
// scan costs a trip to the device, not a trip per window. Only the device
// work takes the arena's device thread, which a Batch holds for a flight
// of cases: the windows are cut into pieces before, and what came back is
// decoded after.
func (m *Memory) ChangedIn(ws []pool.Window) ([]pool.Window, []byte, error) {
	for _, w := range ws {
		if err := m.check(w.Off, w.Len); err != nil {
			return nil, nil, err
		}
	}
	spans := pool.AppendJoined(make([]pool.Window, 0, len(ws)), ws, spanGap)
	ranges, got, err := m.changedInSpans(m.clipAll(spans)) // a sparse arena scans what has memory
	if err != nil {
		return nil, nil, err
	}
	if len(spans) == len(ws) {
		if len(ranges) == 0 {
			return nil, nil, nil // nothing changed reads as nil, as shm's scan gives it
		}
		return ranges, got, nil
	}
	ranges, got = cut(ranges, got, ws)
	return ranges, got, nil
}

// spanGap bytes, at most, lie between two windows that ChangedIn scans as
// one span. An engine cache's case is hundreds of thousands of small
// windows (vLLM's paged V: two bytes a head element, a page's tokens
// interleaved), which as pieces of their own cost an upload and an entry
// each, and past maxWindowEntries a trip to the device each; as spans they
// are a page's worth of blocks, and the host cuts what changed back to the
// windows (cut). Scanning the gaps costs the device only bandwidth.
const spanGap = 4 << 10

// changedInSpans is ChangedIn over spans, sorted and apart.
func (m *Memory) changedInSpans(ws []pool.Window) ([]pool.Window, []byte, error) {
	small, big := m.windowPieces(ws)
	if len(small)+len(big) == 0 {
		return nil, nil, nil
	}
	list := encodePieces(small)
	d := diff{keep: true}
	var entries []byte
	err := m.dev.Do(func(c *cuda.Ctx) error {
		m.mu.Lock() // always after the device thread: see Batch
		defer m.mu.Unlock()
		var err error
		entries, err = m.scanWindows(c, ws, list, small, big, &d)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if entries != nil {
		d = decodeEntries(entries)
	}
	return d.ranges, d.bytes, nil
}

// decodeEntries is the changed ranges, and their bytes, of packed entries
// of a scan: the host's part of a window scan.
func decodeEntries(entries []byte) diff {
	n := len(entries) / entryBytes
	merged := mergeEntries(entries)
	runs := 0 // at most the ranges addMasked makes: an engine cache's blocks hold many
	for _, e := range merged {
		for _, m := range e.mask {
			runs += bits.OnesCount64(m &^ (m << 1))
		}
	}
	d := diff{keep: true, ranges: make([]pool.Window, 0, runs), bytes: make([]byte, 0, n*blockBytes)}
	for _, e := range merged {
		d.addMasked(e.data, e.mask, e.block*blockBytes)
	}
	return d
}

// windowPieces cuts ws into pieces of one baseline each: small ones for
// diff_pieces, big ones for a grid of their own.
func (m *Memory) windowPieces(ws []pool.Window) (small, big []baseline.Piece) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := make([]baseline.Piece, 0, len(ws)+8) // a window is one piece, unless it crosses a fill's edge
	for _, w := range ws {
		all = m.bl.AppendPieces(all, w)
	}
	small = all[:0] // in place: small never passes all's reading index
	for _, p := range all {
		switch {
		case p.Len == 0:
		case p.Len <= bigPiece:
			small = append(small, p)
		default:
			big = append(big, p)
		}
	}
	return small, big
}

// scanWindows uploads list, the small pieces encoded, scans them and the
// big ones, and returns the packed entries of the changed blocks, copied
// to memory of their own for the caller to decode; a scan that finds more
// blocks than the entry buffer holds grows it and scans again. A scan
// that finds more than maxWindowEntries is redone window by window, as
// Changed scans, straight into d (entries is then nil).
func (m *Memory) scanWindows(c *cuda.Ctx, ws []pool.Window, list []byte, small, big []baseline.Piece, d *diff) ([]byte, error) {
	s := &m.scratch.windows
	if len(small) > s.pieceCap {
		if err := realloc(m.dev, &s.pieces, &s.pieceCap, len(small), 256, 8*pieceWords, "cuda arena window list", "pieces"); err != nil {
			return nil, err
		}
	}
	if len(small) > 0 {
		if err := m.toDevice(s.pieces, list); err != nil {
			return nil, fmt.Errorf("upload %d arena windows to scan: %w", len(small), err)
		}
	}
	for {
		n, err := m.scanIn(c, small, big)
		if err != nil || n == 0 {
			return nil, err
		}
		if n > maxWindowEntries {
			for _, w := range ws {
				if err := m.collect(c, w, d); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		if n > s.packedCap {
			if err := realloc(m.dev, &s.packed, &s.packedCap, n, gatherChunk, entryBytes, "cuda arena window entries", "blocks"); err != nil {
				return nil, err
			}
			continue
		}
		entries := make([]byte, n*entryBytes)
		if err := m.toHost(entries, s.packed); err != nil {
			return nil, fmt.Errorf("fetch changed cuda arena blocks: %w", err)
		}
		return entries, nil
	}
}

// scanIn queues the scans of the uploaded small pieces and of each big one
// and returns how many changed blocks they found, packed as far as the
// entry buffer has room.
func (m *Memory) scanIn(c *cuda.Ctx, small, big []baseline.Piece) (int, error) {
	s := &m.scratch
	if err := c.Memset8Async(m.stream, s.count, 0, 4); err != nil {
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
	return s.readCount(m.stream)
}

// cut is the parts of ranges, sorted and maximal, with got their bytes
// back to back, that lie inside ws, sorted windows that do not touch:
// maximal again, since no part runs from one window into the next.
func cut(ranges []pool.Window, got []byte, ws []pool.Window) ([]pool.Window, []byte) {
	out := make([]pool.Window, 0, len(ranges))
	bytes := make([]byte, 0, len(got)) // the parts' bytes are some of got's
	j, at := 0, 0                      // ws[j] is the first window that may hold ranges[i]; at is its bytes' start in got
	for _, r := range ranges {
		for j < len(ws) && ws[j].End() <= r.Off {
			j++
		}
		for k := j; k < len(ws) && ws[k].Off < r.End(); k++ {
			lo, hi := max(r.Off, ws[k].Off), min(r.End(), ws[k].End())
			out = append(out, pool.Window{Off: lo, Len: hi - lo})
			bytes = append(bytes, got[at+lo-r.Off:at+hi-r.Off]...)
		}
		at += r.Len
	}
	if len(out) == 0 {
		return nil, nil // nothing changed reads as nil, as shm's scan gives it
	}
	return out, bytes
}

package cudaarena

import (
	"encoding/binary"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena/internal/baseline"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/pool"
)

// Fill implements pool.Memory: the background of seed over w, counted from
// w's start (byte w.Off+k gets pool.Background(seed, k, 1)), which becomes
// w's baseline.
func (m *Memory) Fill(w pool.Window, seed uint64) error {
	if err := m.check(w.Off, w.Len); err != nil {
		return err
	}
	return m.dev.Do(func(*cuda.Ctx) error {
		m.mu.Lock() // always after the device thread: see Batch
		defer m.mu.Unlock()
		m.bl.Fill(w, seed)
		if w.Len == 0 {
			return nil
		}
		for _, part := range m.clip(w) { // a sparse arena fills what has memory
			if err := m.k.fillRange(m.base, part.Off, part.End(), seed, w.Off); err != nil {
				return err
			}
		}
		return m.sync("fill")
	})
}

// Reset implements pool.Memory: each window gets its baseline back, the
// background where it was filled and zeros elsewhere. A run changes many
// small ranges, so they are restored together, by one kernel launch over a
// list of pieces, in a single trip to the device thread; pieces larger
// than bigPiece get a grid of their own. The windows are cut into pieces
// and encoded before that trip: the arena's device thread, which a Batch
// holds for a flight of cases, only copies and launches.
func (m *Memory) Reset(ws []pool.Window) error {
	for _, w := range ws {
		if err := m.check(w.Off, w.Len); err != nil {
			return err
		}
	}
	small, big := m.windowPieces(m.clipAll(ws))
	var lists [][]byte
	for rest := small; len(rest) > 0; {
		chunk := rest[:min(len(rest), maxPieces)]
		rest = rest[len(chunk):]
		lists = append(lists, encodePieces(chunk))
	}
	return m.dev.Do(func(*cuda.Ctx) error {
		m.mu.Lock() // always after the device thread: see Batch
		defer m.mu.Unlock()
		for _, p := range big {
			if err := m.restore(p); err != nil {
				return err
			}
		}
		for _, list := range lists {
			if err := m.restoreList(list); err != nil {
				return err
			}
		}
		return m.sync("reset")
	})
}

// bigPiece bytes and fewer are restored by one block of restore_pieces.
const bigPiece = 64 << 10

// restore gives one piece its baseline back with a grid of its own.
func (m *Memory) restore(p baseline.Piece) error {
	if p.Filled {
		return m.k.fillRange(m.base, p.Off, p.End(), p.Seed, p.Origin)
	}
	return m.stream.Memset8Async(m.base.Add(p.Off), 0, p.Len)
}

// restoreList uploads encoded pieces, at most maxPieces, and launches
// restore_pieces over them.
func (m *Memory) restoreList(list []byte) error {
	s := &m.scratch
	n := len(list) / (8 * pieceWords)
	if err := s.growPieces(m.dev, n); err != nil {
		return err
	}
	if err := m.toDevice(s.pieces, list); err != nil {
		return fmt.Errorf("upload %d arena ranges to restore: %w", n, err)
	}
	return m.k.restorePieces(m.base, s.pieces, n)
}

// encodePieces lays pieces out as background.cu's struct piece.
func encodePieces(ps []baseline.Piece) []byte {
	out := make([]byte, 0, 8*pieceWords*len(ps))
	for _, p := range ps {
		filled := uint64(0)
		if p.Filled {
			filled = 1
		}
		for _, v := range [pieceWords]uint64{uint64(p.Off), uint64(p.End()), p.Seed, uint64(p.Origin), filled} {
			out = binary.LittleEndian.AppendUint64(out, v)
		}
	}
	return out
}

// sync waits for queued kernels, so another process sees their writes and a
// kernel fault is reported here rather than at some later call.
func (m *Memory) sync(what string) error {
	if err := m.stream.Sync(); err != nil {
		return fmt.Errorf("cuda arena %s: %w", what, err)
	}
	return nil
}

package cudapool

import (
	"fmt"

	"github.com/kvharness/kvharness/harness/pool"
)

// Fill implements pool.Memory: the background of seed over w, counted from
// w's start (byte w.Off+k gets pool.Background(seed, k, 1)), which becomes
// w's baseline.
func (m *Memory) Fill(w pool.Window, seed uint64) error {
	if err := m.check(w.Off, w.Len); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bl.fill(w, seed)
	if w.Len == 0 {
		return nil
	}
	if err := m.k.fillRange(m.base, w.Off, w.End(), seed, w.Off); err != nil {
		return err
	}
	return m.sync("fill")
}

// Reset implements pool.Memory: each window gets its baseline back, the
// background where it was filled and zeros elsewhere.
func (m *Memory) Reset(ws []pool.Window) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range ws {
		if err := m.check(w.Off, w.Len); err != nil {
			return err
		}
		if err := m.restore(w); err != nil {
			return err
		}
	}
	return m.sync("reset")
}

func (m *Memory) restore(w pool.Window) error {
	for _, p := range m.bl.pieces(w) {
		var err error
		if p.filled {
			err = m.k.fillRange(m.base, p.Off, p.End(), p.seed, p.origin)
		} else {
			err = m.dev.Memset8(m.base.Add(p.Off), 0, p.Len)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sync waits for queued kernels, so another process sees their writes and a
// kernel fault is reported here rather than at some later call.
func (m *Memory) sync(what string) error {
	if err := m.dev.Sync(); err != nil {
		return fmt.Errorf("cuda arena %s: %w", what, err)
	}
	return nil
}

package oracle

import (
	"bytes"
	"fmt"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/pool"
)

// Delta is what a run changed: windows, as offsets from the pool base
// (negative in the leading guard), and their new bytes, concatenated. Two
// runs on pools with the same background left the same pool iff their
// deltas are equal, wherever the pools live.
type Delta struct {
	Windows []pool.Window
	Bytes   []byte
}

// Equal reports whether two deltas are identical.
func (d Delta) Equal(o Delta) bool {
	if len(d.Windows) != len(o.Windows) || !bytes.Equal(d.Bytes, o.Bytes) {
		return false
	}
	for i := range d.Windows {
		if d.Windows[i] != o.Windows[i] {
			return false
		}
	}
	return true
}

// bytesChanger is a pool.Memory that returns changed ranges with their
// bytes in one call: the CUDA backend, for which a read per range would be
// a trip to the device each.
type bytesChanger interface {
	ChangedBytes(w pool.Window) ([]pool.Window, []byte, error)
}

// Capture reads what a run changed in the region, guards included.
func Capture(mem arena.Memory, r pool.Region) (Delta, error) {
	ws, b, err := changedBytes(mem, r.Span())
	if err != nil {
		return Delta{}, err
	}
	d := Delta{Windows: make([]pool.Window, len(ws)), Bytes: b}
	for i, w := range ws {
		d.Windows[i] = pool.Window{Off: w.Off - r.Pool.Off, Len: w.Len}
	}
	return d, nil
}

// changedBytes lists the changed ranges of w and reads them, back to back.
func changedBytes(mem arena.Memory, w pool.Window) ([]pool.Window, []byte, error) {
	if bc, ok := mem.(bytesChanger); ok {
		ws, b, err := bc.ChangedBytes(w)
		if err != nil {
			return nil, nil, err
		}
		if n := pool.Total(ws); n != len(b) {
			return nil, nil, fmt.Errorf("arena returned %d changed bytes for ranges of %d", len(b), n)
		}
		if b == nil {
			b = []byte{}
		}
		return ws, b, nil
	}
	ws, err := mem.Changed(w)
	if err != nil {
		return nil, nil, err
	}
	b := make([]byte, pool.Total(ws))
	off := 0
	for _, w := range ws {
		if err := mem.ReadAt(b[off:off+w.Len], w.Off); err != nil {
			return nil, nil, err
		}
		off += w.Len
	}
	return ws, b, nil
}

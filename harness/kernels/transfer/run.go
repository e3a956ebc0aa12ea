package transfer

import (
	"context"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// transferRun is what one Transfer call did: the descriptors the plugin
// answered, and what changed in every buffer's two regions (relative to
// each pool's base) and in staging.
type transferRun struct {
	descs   []pd.Descriptor
	src     []oracle.Delta
	dst     []oracle.Delta
	staging []pool.Window // arena offsets
}

// equal reports whether two runs answered and wrote the same.
func (r transferRun) equal(o transferRun) bool {
	if len(r.descs) != len(o.descs) || len(r.staging) != len(o.staging) {
		return false
	}
	for i := range r.descs {
		if r.descs[i] != o.descs[i] {
			return false
		}
	}
	for i := range r.staging {
		if r.staging[i] != o.staging[i] {
			return false
		}
	}
	for i := range r.src {
		if !r.src[i].Equal(o.src[i]) || !r.dst[i].Equal(o.dst[i]) {
			return false
		}
	}
	return true
}

// run makes one Transfer call and captures what it changed, leaving the
// arena as it found it, even when the call failed.
func (t *Target) run(ctx context.Context, req *kvpb.TransferRequest) (transferRun, error) {
	if err := t.Ensure(ctx); err != nil { // another target of the same plugin may have attached since
		return transferRun{}, err
	}
	resp, err := Transfer(ctx, t.Plugin, req)
	r, cerr := t.capture()
	if cerr != nil {
		return r, cerr
	}
	if err != nil {
		return r, err
	}
	r.descs = descriptorsOf(resp)
	return r, nil
}

func (t *Target) capture() (transferRun, error) {
	var r transferRun
	n := len(t.Buffers)
	for i, reg := range t.Pools.Regions {
		d, err := captureRegion(t.Mem(), reg)
		if err != nil {
			return r, err
		}
		if i < n {
			r.src = append(r.src, d)
		} else {
			r.dst = append(r.dst, d)
		}
	}
	ws, err := t.Mem().Changed(t.Pools.Staging)
	if err != nil {
		return r, err
	}
	r.staging = ws
	return r, t.Mem().Reset(ws)
}

// captureRegion reads what a run changed in a region and puts the
// background back.
func captureRegion(mem arena.Memory, r pool.Region) (oracle.Delta, error) {
	d, err := oracle.Capture(mem, r)
	if err != nil {
		return d, err
	}
	abs := make([]pool.Window, len(d.Windows))
	for i, w := range d.Windows {
		abs[i] = pool.Window{Off: w.Off + r.Pool.Off, Len: w.Len}
	}
	return d, mem.Reset(abs)
}

// maxField bounds the descriptor fields the oracle computes with: far past
// any arena, and far from overflowing a product of two.
const maxField = 1 << 40

func descriptorsOf(resp *kvpb.TransferResponse) []pd.Descriptor {
	sat := func(v uint64) int { return int(min(v, maxField)) }
	out := make([]pd.Descriptor, len(resp.GetDescriptors()))
	for i, d := range resp.GetDescriptors() {
		out[i] = pd.Descriptor{Room: d.Room, Buffer: int(d.Buffer), Src: sat(d.SrcOffset), Dst: sat(d.DstOffset),
			Length: sat(d.Length), ItemLen: sat(d.ItemLen), Run: sat(d.Run)}
	}
	return out
}

package sequence

import (
	_ "embed"
	"encoding/binary"
	"fmt"

	"github.com/kvharness/kvharness/harness/cuda"
)

// Page digests: after each step the check compares one digest per live
// page and layer with the shadow's, and reads a page only when its digest
// differs. On the host the pool is the harness's own mapping, digested in
// place with the process's hash (fingerprint). On CUDA a kernel (digest.cu,
// compiled by NVRTC) digests the listed pages where they live and copies
// back 8 bytes a page; the shadow then digests its pages with pageDigest,
// the kernel's function written in Go.

//go:embed digest.cu
var digestSource string

// digestThreads is digest.cu's THREADS: a block per page.
const digestThreads = 256

// pageDigest is digest.cu's page_digests for one page, on the host: the
// wrapping sum over its 8-byte little-endian words w_i of
// mix(w_i ^ i·0x9e3779b97f4a7c15). Pages are whole words (a bf16 row is
// 2·D bytes, D a multiple of 8).
func pageDigest(b []byte) uint64 {
	var h uint64
	for i := 0; i+8 <= len(b); i += 8 {
		h += mix(binary.LittleEndian.Uint64(b[i:]) ^ uint64(i/8)*0x9e3779b97f4a7c15)
	}
	return h
}

// digester digests layer l's listed pages of a target.
type digester interface {
	digests(t *Target, l int, pages []int, buf []byte) ([]uint64, error)
	close()
}

// hostDigests reads each page (in place on the host) and digests it with f.
type hostDigests struct{ f func([]byte) uint64 }

func (h hostDigests) digests(t *Target, l int, pages []int, buf []byte) ([]uint64, error) {
	out := make([]uint64, len(pages))
	for i, pg := range pages {
		b, err := t.page(l, pg, buf)
		if err != nil {
			return nil, err
		}
		out[i] = h.f(b)
	}
	return out, nil
}

func (hostDigests) close() {}

// deviceDigests runs digest.cu over an arena in CUDA memory: the page
// offsets go up, a digest per page comes back.
type deviceDigests struct {
	dev       *cuda.Device
	fn        *cuda.Function
	mod       *cuda.Module
	s         *cuda.Stream
	arena     cuda.Ptr
	offs, out cuda.Ptr // device buffers of cap entries each
	cap       int
}

func newDeviceDigests(dev *cuda.Device, arena cuda.Ptr) (*deviceDigests, error) {
	mod, err := dev.Compile("sequence/digest.cu", digestSource, "-lineinfo")
	if err != nil {
		return nil, fmt.Errorf("page digest kernel: %w", err)
	}
	fn, err := mod.Function("page_digests")
	if err != nil {
		mod.Unload()
		return nil, err
	}
	s, err := dev.NewStream()
	if err != nil {
		mod.Unload()
		return nil, err
	}
	return &deviceDigests{dev: dev, fn: fn, mod: mod, s: s, arena: arena}, nil
}

// grow makes room for n pages' offsets and digests.
func (d *deviceDigests) grow(n int) error {
	if n <= d.cap {
		return nil
	}
	d.free()
	c := max(n, 2*d.cap, 1024)
	var err error
	if d.offs, err = d.dev.Alloc(8 * c); err != nil {
		return err
	}
	if d.out, err = d.dev.Alloc(8 * c); err != nil {
		d.dev.Free(d.offs)
		d.offs = 0
		return err
	}
	d.cap = c
	return nil
}

func (d *deviceDigests) free() {
	if d.cap > 0 {
		d.dev.Free(d.offs)
		d.dev.Free(d.out)
		d.cap = 0
	}
}

func (d *deviceDigests) digests(t *Target, l int, pages []int, _ []byte) ([]uint64, error) {
	if len(pages) == 0 {
		return nil, nil
	}
	if err := d.grow(len(pages)); err != nil {
		return nil, err
	}
	offs := make([]byte, 8*len(pages))
	for i, pg := range pages {
		binary.LittleEndian.PutUint64(offs[8*i:], uint64(t.pageAt(l, pg)))
	}
	words := uint32(t.layouts[l].PageBytes() / 8)
	got := make([]byte, 8*len(pages))
	err := d.dev.Do(func(c *cuda.Ctx) error {
		if err := c.HtoDAsync(d.s, d.offs, offs); err != nil {
			return err
		}
		grid := cuda.Dim3{X: uint32(min(len(pages), 1<<16))}
		if err := c.Launch(d.fn, d.s, grid, cuda.Dim3{X: digestThreads}, 0, d.arena, d.offs, uint32(len(pages)), words, d.out); err != nil {
			return err
		}
		if err := c.DtoHAsync(d.s, got, d.out); err != nil {
			return err
		}
		return c.StreamSync(d.s)
	})
	if err != nil {
		return nil, fmt.Errorf("page digests of layer %d: %w", l, err)
	}
	out := make([]uint64, len(pages))
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(got[8*i:])
	}
	return out, nil
}

func (d *deviceDigests) close() {
	d.free()
	d.s.Destroy()
	d.mod.Unload()
}

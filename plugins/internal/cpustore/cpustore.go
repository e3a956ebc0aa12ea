// Package cpustore holds the CPU store kernels the bundled plugins are
// built from: the address math and encoding of one token, per layout. Each
// plugin decides which rows to store and which mistakes its variants make;
// this package only does what it is told, so a mutant's bug is visible in
// its plugin's main.go.
package cpustore

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/kvharness/kvharness/plugins/internal/fp8"
)

// Geometry is where a layout puts one token: the e4m3 values (or the bf16
// row) and the scale, as offsets from the pool base.
type Geometry interface {
	Offsets(slot int64) (value, scale int)
}

// FloorDiv divides rounding toward negative infinity, as a shift by the
// page bits does in a CUDA kernel: slot -1 is the last token of page -1.
func FloorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// Rows places each token's record at slot × Stride; the scale follows the
// values (vLLM's 132 B indexer rows, and plain bf16 rows with no scale).
type Rows struct{ Stride, ValueBytes int }

// Offsets implements Geometry.
func (r Rows) Offsets(slot int64) (int, int) {
	at := int(slot) * r.Stride
	return at, at + r.ValueBytes
}

// Paged places, per page of P tokens, P value records then P scales
// (SGLang's indexer page).
type Paged struct{ P, ValueBytes, ScaleBytes, PageBytes int }

// Offsets implements Geometry.
func (g Paged) Offsets(slot int64) (int, int) {
	page, off := FloorDiv(slot, int64(g.P))
	base := int(page) * g.PageBytes
	return base + int(off)*g.ValueBytes, base + g.P*g.ValueBytes + int(off)*g.ScaleBytes
}

// PutBF16 copies a bf16 row to arena[at:].
// The row is copied as bytes: bf16 in memory is little-endian on every
// machine kvharness runs on, as on the GPU.
func PutBF16(arena []byte, at int, row []uint16) {
	dst := arena[at : at+2*len(row)]
	if len(row) > 0 {
		copy(dst, unsafe.Slice((*byte)(unsafe.Pointer(&row[0])), 2*len(row)))
	}
}

// Quantizer turns a bf16 row into e4m3 codes and a float32 scale.
type Quantizer struct {
	Floor      bool // apply the 1e-4 scale floor
	TowardZero bool // truncate instead of rounding to nearest even (a mutant)
}

// Exact is the correct quantizer.
var Exact = Quantizer{Floor: true}

// PutFP8 quantizes row and writes its codes at value and its scale at
// scale, both arena offsets.
func (q Quantizer) PutFP8(arena []byte, value, scale int, row []uint16) {
	s := fp8.Scale(row, q.Floor)
	dst := arena[value : value+len(row)]
	if q.TowardZero {
		for i, e := range row {
			dst[i] = fp8.FromFloat32TowardZero(fp8.BF16(e) / s)
		}
	} else {
		fp8.Quantize(dst, row, s)
	}
	binary.LittleEndian.PutUint32(arena[scale:scale+4], math.Float32bits(s))
}

// Addressing is the CUDA kernels' view of a geometry: tokens per
// addressing page, page bytes and value bytes. A row layout is a paged
// layout of one token per page. The kernels read and write float32 scales,
// so a paged geometry with other scales has no addressing.
func Addressing(g Geometry) (tokens, pageBytes, valueBytes int, err error) {
	switch g := g.(type) {
	case Rows:
		return 1, g.Stride, g.ValueBytes, nil
	case Paged:
		if g.ScaleBytes != 4 {
			return 0, 0, 0, fmt.Errorf("paged geometry with %d-byte scales: the CUDA kernels use float32 scales", g.ScaleBytes)
		}
		return g.P, g.PageBytes, g.ValueBytes, nil
	}
	return 0, 0, 0, fmt.Errorf("geometry %T has no CUDA addressing; add it to cpustore.Addressing", g)
}

package cpuread

import (
	"encoding/binary"
	"math"

	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

// Keys scores a query against the key a pool holds for a slot.
type Keys interface {
	// Score returns q·k accumulated in float32, element by element.
	Score(q []float32, slot int64) float32
}

// BF16 keys are rows of bf16 elements at the geometry's value offset.
type BF16 struct {
	Pool     []byte // the arena from the pool base on
	Geometry cpustore.Geometry
}

// Score implements Keys.
func (k BF16) Score(q []float32, slot int64) float32 {
	at, _ := k.Geometry.Offsets(slot)
	row := k.Pool[at : at+2*len(q)]
	var acc float32
	for i, x := range q {
		acc += x * math.Float32frombits(uint32(binary.LittleEndian.Uint16(row[2*i:]))<<16)
	}
	return acc
}

// FP8 keys are e4m3 codes at the value offset of Values and one float32
// scale at the scale offset of Scales. The two geometries are the same for
// a correct kernel; a mutant reads its scales through another one.
type FP8 struct {
	Pool           []byte
	Values, Scales cpustore.Geometry
}

// Score implements Keys: the codes' dot product times the scale, the way a
// GPU kernel factors the per-token scale out of its inner loop.
func (k FP8) Score(q []float32, slot int64) float32 {
	at, _ := k.Values.Offsets(slot)
	_, sat := k.Scales.Offsets(slot)
	codes := k.Pool[at : at+len(q)]
	var acc float32
	for i, x := range q {
		acc += x * E4M3(codes[i])
	}
	return acc * math.Float32frombits(binary.LittleEndian.Uint32(k.Pool[sat:]))
}

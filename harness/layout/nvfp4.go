package layout

import (
	"fmt"
	"math"
)

// NVFP4 is e2m1 codes, two per byte, with an e4m3 scale per block of 16
// elements and a float32 global scale. The arithmetic follows vLLM's
// cvt_warp_fp16_to_fp4 (csrc/libtorch_stable/quantization/fp4/
// nvfp4_utils.cuh), as its NVFP4 KV cache store uses it:
//
//	global = 1 / k_scale                         (the kernel's static input)
//	block  = e4m3(global · (amax / 6))           (stored, saturating)
//	code   = e2m1(x · (1 / (block / global)))    (round to nearest even, saturating at 6)
//
// The kernel computes 1/6 and both reciprocals with rcp.approx; the
// reference divides exactly, and the judgement accepts a neighbouring
// code only where the exact quotient lies within CodeEps of the boundary
// between the two, as for fp8.

// nvfp4Global is the global scale for a static k_scale: 1/k_scale in
// float32, as vLLM's store computes it.
func nvfp4Global(kScale float32) float32 { return 1 / kScale }

// nvfp4BlockScale is a block's reference scale: its e4m3 code and value.
func nvfp4BlockScale(amax, global float32) (byte, float32) {
	c := EncodeE4M3(global * (amax / 6))
	return c, DecodeE4M3(c)
}

// nvfp4Codes writes a block's reference codes under block scale sd,
// packed two per byte, the even element in the low nibble (PTX
// cvt.rn.satfinite.e2m1x2.f32 puts its second operand there).
func nvfp4Codes(x []uint16, global, sd float32, dst []byte) {
	var out float32
	if sd != 0 {
		out = global / sd
	}
	for i := 0; i+1 < len(x); i += 2 {
		lo := EncodeE2M1(BF16ToFloat32(x[i]) * out)
		hi := EncodeE2M1(BF16ToFloat32(x[i+1]) * out)
		dst[i/2] = hi<<4 | lo
	}
}

// BlockDiff is how a stored NVFP4 block scale missed the reference's.
type BlockDiff struct {
	Got, Want byte    // the stored e4m3 code and the reference's
	Value     float64 // global · amax / 6, the value the code rounds
	Global    float32
	Exact     bool
}

func (d BlockDiff) String() string {
	rule := "is not e4m3 of"
	if d.Exact {
		rule = "is not the reference's e4m3 of"
	}
	return fmt.Sprintf("stored block scale %#02x (%g) %s global·amax/6 = %.8g (global %g): want %#02x (%g)",
		d.Got, DecodeE4M3(d.Got), rule, d.Value, d.Global, d.Want, DecodeE4M3(d.Want))
}

// acceptRatio decides whether code c of format f passes as the rounding
// of num/den, both exact in float64 (num a product of a bf16 element and
// a float32 scale, den a code's value or 6): c is the reference's code,
// or its neighbour across a boundary b with |num| within CodeEps·b·den of
// b·den. On an exact tie the far side passes only where the kernel's
// arithmetic can be inexact (exactArith false).
func acceptRatio(f CodeFormat, saturate bool, num, den float64, c, nominal byte, exactArith bool) bool {
	if c == nominal {
		return true
	}
	b, ok := boundary(f, saturate, c, nominal)
	if !ok || !(den > 0) || math.IsInf(den, 0) || math.IsNaN(num) || math.Signbit(num) != (c&f.signBit() != 0) {
		return false
	}
	bd := b * den
	d := math.Abs(math.Abs(num) - bd)
	if d == 0 {
		return !exactArith
	}
	return d <= CodeEps*bd
}

// judgeNVFP4 judges an e2m1 field and its block scales, head by head and
// block by block: each stored block scale against e4m3(global·amax/6),
// each code against the rounding of x over the stored block scale (the
// reference's, in exact mode). NaN elements have no code: any passes.
func (l *Layout) judgeNVFP4(f *fieldInfo, row []uint16, in Inputs, v view, m Mode) []Finding {
	codes, cbase, cplane := v.field(f)
	sf := f.scale
	scales, sbase, splane := v.field(sf)
	blocks := (f.To - f.From) / f.Group
	var out []Finding
	want := make([]byte, f.Group/2)
	for h := range l.heads {
		x := l.headElems(f, row, h)
		gs := nvfp4Global(in.scale(l, f, h))
		for g := range blocks {
			grp := x[g*f.Group : (g+1)*f.Group]
			amax := Amax(grp)
			refCode, refSD := nvfp4BlockScale(amax, gs)
			sat := sbase + h*blocks + g
			stored := scales[sat]
			value := float64(gs) * float64(amax)
			scaleOK := stored == refCode || (m != Exact && acceptRatio(E4M3, true, value, 6, stored, refCode, false))
			if !scaleOK {
				out = append(out, Finding{Rule: RuleScale, Field: sf.Name, Group: g, Head: l.head(h), Plane: splane,
					Bytes: []int{sat}, Want: []byte{refCode}, Block: &BlockDiff{Got: stored, Want: refCode, Value: value / 6, Global: gs, Exact: m == Exact}})
			}
			against := DecodeE4M3(stored)
			if m == Exact {
				against = refSD
			}
			cat := cbase + (h*(f.To-f.From)+g*f.Group)/2
			blockCodes := codes[cat : cat+f.Group/2]
			d := judgeE2M1(grp, gs, against, blockCodes, m, want)
			if d != nil && !scaleOK && m != Exact && judgeE2M1(grp, gs, refSD, blockCodes, m, nil) == nil {
				d = nil // codes that follow the reference's scale are not a second bug
			}
			if d == nil {
				continue
			}
			fd := Finding{Rule: RuleCode, Field: f.Name, Group: g, Head: l.head(h), Plane: cplane, Codes: d}
			for i, w := range want {
				if w != blockCodes[i] {
					fd.Bytes, fd.Want = append(fd.Bytes, cat+i), append(fd.Want, w)
				}
			}
			d.Elem += (f.tensor*l.heads+h)*l.HeadDim + f.From + g*f.Group
			out = append(out, fd)
		}
	}
	return out
}

// judgeE2M1 judges a block's packed codes under block scale sd: nil when
// every code passes, else the first failure. want, when not nil, receives
// the bytes the judgement wants: each failing nibble replaced by the
// reference's.
func judgeE2M1(x []uint16, gs, sd float32, packed []byte, m Mode, want []byte) *CodeDiff {
	var buf [8]byte
	ref := buf[:0]
	if len(packed) <= len(buf) {
		ref = buf[:len(packed)]
	} else {
		ref = make([]byte, len(packed))
	}
	nvfp4Codes(x, gs, sd, ref)
	exactArith := isPow2(gs) && isPow2(sd)
	var d *CodeDiff
	for i, xb := range x {
		shift := 4 * (i % 2)
		c, n := packed[i/2]>>shift&0xf, ref[i/2]>>shift&0xf
		if want != nil && i%2 == 0 {
			want[i/2] = packed[i/2]
		}
		xi := float64(BF16ToFloat32(xb))
		if c == n || math.IsNaN(xi) {
			continue
		}
		if m != Exact && acceptRatio(E2M1, true, xi*float64(gs), float64(sd), c, n, exactArith) {
			continue
		}
		if want != nil {
			want[i/2] = want[i/2]&^(0xf<<shift) | n<<shift
		}
		if d == nil {
			d = &CodeDiff{Of: len(x), Elem: i, Got: c, Want: n, Off: codesOff(E2M1, c, n),
				Quotient: xi * float64(gs) / float64(sd), Scale: sd / gs, Exact: m == Exact, Format: E2M1}
		}
		d.Bad++
	}
	return d
}

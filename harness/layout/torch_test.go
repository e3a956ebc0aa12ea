package layout

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// This file is an independent control: PyTorch's per-token fp8
// quantization computed in Go with float32 semantics, sharing no code
// with the reference encoder. Its scale is max(amax, 1e-4) / 448 as
// PyTorch evaluates a tensor divided by a Python scalar: a multiplication
// by the float32 reciprocal, fl(amax × fl32(1/448)). Its codes are
// x / scale (IEEE division) converted by a port of c10's
// fp8e4m3fn_from_fp32_value.

// torchReciprocal448 is fl32(1/448), rounded once from the exact value.
var torchReciprocal448 = float32(1.0 / 448)

func torchScale(row []uint16, eps float32) float32 {
	amax := float32(0)
	for _, b := range row {
		v := math.Float32frombits(uint32(b&0x7fff) << 16)
		if v > amax { // NaN compares false: ignored
			amax = v
		}
	}
	if amax < eps {
		amax = eps
	}
	return amax * torchReciprocal448
}

// torchE4M3 is c10::detail::fp8e4m3fn_from_fp32_value: round to nearest
// even by integer bias, no saturation (480 and above, and NaN, become
// 0x7f with the input's sign).
func torchE4M3(f float32) byte {
	const fp8Max = uint32(1087) << 20    // 480.0
	const denormMask = uint32(141) << 23 // 2^14: adding it rounds to multiples of 2^-9
	bits := math.Float32bits(f)
	sign := bits & 0x80000000
	bits ^= sign
	var r byte
	switch {
	case bits >= fp8Max:
		r = 0x7f
	case bits < uint32(121)<<23: // below 2^-6: subnormal
		sum := math.Float32frombits(bits) + math.Float32frombits(denormMask)
		r = byte(math.Float32bits(sum) - denormMask)
	default:
		odd := (bits >> 20) & 1
		bits -= (127 - 7) << 23 // rebias the exponent (c10 adds (uint32_t)(7 - 127) << 23)
		bits += 0x7ffff
		bits += odd
		r = byte(bits >> 20)
	}
	return r | byte(sign>>24)
}

// torchRows draws rows as the experiment did: N(0,1) bf16 rows
// times a power of two, plus the generator's zero and tiny rows.
func torchRows(n, d int, seed uint64) [][]uint16 {
	rng := rand.New(rand.NewPCG(seed, 17))
	rows := make([][]uint16, n)
	for i := range rows {
		rows[i] = make([]uint16, d)
		scale := math.Ldexp(1, rng.IntN(16)-8)
		for j := range rows[i] {
			switch i % 16 {
			case 0: // zero row
			case 1: // tiny row: the floor decides
				rows[i][j] = Float32ToBF16(float32((rng.Float64()*2 - 1) * 9e-5))
			default:
				rows[i][j] = Float32ToBF16(float32(rng.NormFloat64() * scale))
			}
		}
	}
	return rows
}

// torchRecord is what a kernel doing PyTorch's arithmetic stores for one
// row in fp8-rows: the codes, then the float32 scale.
func torchRecord(row []uint16) []byte {
	s := torchScale(row, 1e-4)
	rec := make([]byte, len(row)+4)
	for i, b := range row {
		x := math.Float32frombits(uint32(b) << 16)
		rec[i] = torchE4M3(x / s)
	}
	binary.LittleEndian.PutUint32(rec[len(row):], math.Float32bits(s))
	return rec
}

// TestTorchArithmeticPasses: PyTorch's quantization passes the default
// recipe on every row, though its scale is not IEEE amax/448 on many, and
// fails exact judgement on exactly those rows. Given PyTorch's own scale,
// the reference rounding reproduces every PyTorch code, ties included.
func TestTorchArithmeticPasses(t *testing.T) {
	l := mustBuiltin(t, "fp8-rows", 128, 64)
	rows := torchRows(4096, 128, 1)
	var offScale, ties, codes int
	for i, row := range rows {
		rec := torchRecord(row)
		if fs := l.Judge(row, [][]byte{rec}, ByRecipe); len(fs) > 0 {
			t.Fatalf("row %d: PyTorch's arithmetic fails the default recipe: %s", i, Summary(fs))
		}
		s := math.Float32frombits(binary.LittleEndian.Uint32(rec[128:]))
		ieee := Scale(row)
		exact := l.Judge(row, [][]byte{rec}, Exact)
		if s != ieee {
			offScale++
			if ULPs(s, ieee) != 1 {
				t.Errorf("row %d: PyTorch's scale %v is %d ulps from amax/448 = %v", i, s, ULPs(s, ieee), ieee)
			}
			if len(exact) == 0 || exact[0].Rule != RuleScale {
				t.Errorf("row %d: a scale 1 ulp off passes exact judgement", i)
			}
		} else if len(exact) > 0 {
			t.Errorf("row %d: PyTorch's bytes equal the reference's scale but fail exact judgement: %s", i, Summary(exact))
		}
		for j, b := range row {
			x := BF16ToFloat32(b)
			if EncodeE4M3(x/s) != rec[j] {
				t.Fatalf("row %d element %d: reference rounding of x/s = %v gives %#02x, PyTorch %#02x", i, j, x/s, EncodeE4M3(x/s), rec[j])
			}
			if q := float64(x) / float64(s); isTie(q) {
				ties++
			}
			codes++
		}
	}
	t.Logf("%d of %d rows: PyTorch's scale is 1 ulp from IEEE amax/448; %d of %d codes are exact ties", offScale, len(rows), ties, codes)
	if offScale < len(rows)/10 || ties == 0 {
		t.Errorf("only %d rows with a scale off and %d ties: the control does not exercise the tolerance", offScale, ties)
	}
}

// isTie reports whether q lies exactly between two adjacent e4m3 values.
func isTie(q float64) bool {
	a := math.Abs(q)
	for c := 0; c < 0x7e; c++ {
		if a == (float64(DecodeE4M3(byte(c)))+float64(DecodeE4M3(byte(c+1))))/2 {
			return true
		}
	}
	return false
}

// TestTorchScaleEveryAmax: for every non-negative finite bf16 amax and the
// floors engines use, PyTorch's scale lies within the default 1 ulp of
// the recipe's.
func TestTorchScaleEveryAmax(t *testing.T) {
	for _, eps := range []float64{1e-4, 1e-8, 0} {
		q := DefaultQuant(KindScaleF32)
		q.Eps = eps
		off := 0
		for b := range uint16(0x7f80) {
			row := []uint16{b}
			s := torchScale(row, float32(eps))
			d, ok := q.JudgeScale(BF16ToFloat32(b), s)
			if !ok {
				t.Fatalf("eps %v amax %v: PyTorch's scale fails: %v", eps, BF16ToFloat32(b), d)
			}
			if d.Off != 0 {
				off++
			}
		}
		t.Logf("eps %v: %d of %d amax values give a PyTorch scale 1 ulp from IEEE", eps, off, 0x7f80)
		if off == 0 {
			t.Errorf("eps %v: no PyTorch scale differs from IEEE: the control is not PyTorch's arithmetic", eps)
		}
	}
}

// TestTorchE4M3AgreesWithReference pins the port on every bf16 input it
// rounds without saturating: below 464, where both conversions round to
// nearest even.
func TestTorchE4M3AgreesWithReference(t *testing.T) {
	for b := range 1 << 16 {
		x := BF16ToFloat32(uint16(b))
		if x != x || math.Abs(float64(x)) > 464 {
			continue
		}
		if got, want := torchE4M3(x), EncodeE4M3(x); got != want {
			t.Fatalf("bf16 %#04x (%v): port %#02x, reference %#02x", b, x, got, want)
		}
	}
	if torchE4M3(470) != 0x7f || torchE4M3(-500) != 0xff || torchE4M3(464) != 0x7e {
		t.Errorf("overflow: 470 → %#02x, -500 → %#02x, 464 → %#02x", torchE4M3(470), torchE4M3(-500), torchE4M3(464))
	}
}

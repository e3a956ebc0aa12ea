package gpuread

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/read"
	"github.com/kvharness/kvharness/plugins/internal/cpuread"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

// gpuCase is one launch: a layout's geometry, a rule, k and the lists.
type gpuCase struct {
	name           string
	kind           Kind
	values, scales cpustore.Geometry
	rule           Rule
	k              int
	lists          [][]int64
}

const (
	gpuD     = 128
	gpuP     = 64
	gpuSlots = 4096
)

func gpuCases(rng *rand.Rand) []gpuCase {
	bf16 := cpustore.Rows{Stride: 2 * gpuD, ValueBytes: 2 * gpuD}
	rows := cpustore.Rows{Stride: gpuD + 4, ValueBytes: gpuD}
	paged := cpustore.Paged{P: gpuP, ValueBytes: gpuD, ScaleBytes: 4, PageBytes: (gpuD + 4) * gpuP}
	long := randomList(rng, 3000) // several rounds of the candidate buffer
	mixed := [][]int64{{0, 63, 64, gpuSlots - 1}, nil, randomList(rng, 5), randomList(rng, 40), {7}}
	var out []gpuCase
	for _, l := range []struct {
		name           string
		kind           Kind
		values, scales cpustore.Geometry
	}{{"bf16", BF16, bf16, bf16}, {"fp8-rows", FP8, rows, rows}, {"fp8-paged", FP8, paged, paged}, {"fp8-paged scale-stride", FP8, paged, rows}} {
		for _, rule := range []Rule{Correct, UnmaskedTail, Scratch, SharedRange} { // SharedRange: exact on finite scores
			out = append(out, gpuCase{l.name, l.kind, l.values, l.scales, rule, 4, mixed})
		}
		out = append(out,
			gpuCase{l.name + " long", l.kind, l.values, l.scales, Correct, 100, [][]int64{long, randomList(rng, 700)}},
			gpuCase{l.name + " k=1", l.kind, l.values, l.scales, Correct, 1, mixed},
			gpuCase{l.name + " big k", l.kind, l.values, l.scales, Correct, 2048, [][]int64{long[:2500]}})
	}
	return out
}

func randomList(rng *rand.Rand, n int) []int64 {
	out := make([]int64, n)
	for i, s := range rng.Perm(gpuSlots)[:n] {
		out[i] = int64(s)
	}
	return out
}

// hostArena is a read's arena on the host: the pool, then staging.
type hostArena struct {
	mem                                                []byte
	base, queries, indptr, tokens, outSlots, outScores int
	requests, tokenCount, k                            int
}

func align(n int) int { return (n + 255) / 256 * 256 }

// newArena lays out and fills an arena: random finite keys and scales,
// random queries, the lists.
func newArena(rng *rand.Rand, c gpuCase) *hostArena {
	a := &hostArena{base: 4096, requests: len(c.lists), k: c.k}
	for _, l := range c.lists {
		a.tokenCount += len(l)
	}
	poolBytes := align(gpuSlots * 2 * gpuD)
	a.queries = a.base + poolBytes + 4096
	a.indptr = a.queries + align(2*gpuD*a.requests)
	a.tokens = a.indptr + align(8*(a.requests+1))
	a.outSlots = a.tokens + align(8*a.tokenCount)
	a.outScores = a.outSlots + align(8*a.requests*c.k)
	a.mem = make([]byte, a.outScores+align(4*a.requests*c.k))
	for i := a.base; i < a.base+poolBytes; i++ {
		a.mem[i] = byte(rng.Uint32() & 0x3f) // small exponents: finite bf16, e4m3 without NaN codes
	}
	// Scales from a set whose float32 bytes are no e4m3 NaN code (0x7f,
	// 0xff): where the scales' geometry is not the values' (scale-stride),
	// a scale written for one lands among the other's value bytes, and the
	// nan-shared-range rule, exact on finite scores only, must see none.
	scales := []float32{0.5, 0.625, 0.75, 0.875, 1, 1.25, 1.5}
	for s := range int64(gpuSlots) {
		for _, g := range []cpustore.Geometry{c.values, c.scales} {
			if _, sat := g.Offsets(s); c.kind == FP8 {
				binary.LittleEndian.PutUint32(a.mem[a.base+sat:], math.Float32bits(scales[rng.IntN(len(scales))]))
			}
		}
	}
	for i := range a.requests * gpuD {
		binary.LittleEndian.PutUint16(a.mem[a.queries+2*i:], uint16(rng.Uint32()&0x3fff)|uint16(rng.Uint32()&0x8000))
	}
	n := 0
	for r, l := range c.lists {
		for _, s := range l {
			binary.LittleEndian.PutUint64(a.mem[a.tokens+8*n:], uint64(s))
			n++
		}
		binary.LittleEndian.PutUint64(a.mem[a.indptr+8*(r+1):], uint64(n))
	}
	return a
}

// cpu runs the plugins' CPU read on a copy of the arena, with the rule's
// span, and returns the arena after it.
func (a *hostArena) cpu(c gpuCase) []byte {
	mem := slices.Clone(a.mem)
	call := &read.Call{Arena: mem, Requests: a.requests, K: a.k,
		Pool:      sdk.Pool{Slots: gpuSlots, Base: a.base, Layout: sdk.Layout{HeadDim: gpuD, PageSize: gpuP}},
		Queries:   make([]uint16, a.requests*gpuD),
		Indptr:    make([]int64, a.requests+1),
		Tokens:    make([]int64, a.tokenCount),
		OutSlots:  make([]int64, a.requests*a.k),
		OutScores: make([]float32, a.requests*a.k)}
	for i := range call.Queries {
		call.Queries[i] = binary.LittleEndian.Uint16(mem[a.queries+2*i:])
	}
	for i := range call.Indptr {
		call.Indptr[i] = int64(binary.LittleEndian.Uint64(mem[a.indptr+8*i:]))
	}
	for i := range call.Tokens {
		call.Tokens[i] = int64(binary.LittleEndian.Uint64(mem[a.tokens+8*i:]))
	}
	var keys cpuread.Keys = cpuread.FP8{Pool: mem[a.base:], Values: c.values, Scales: c.scales}
	if c.kind == BF16 {
		keys = cpuread.BF16{Pool: mem[a.base:], Geometry: c.values}
	}
	span := cpuread.ListSpan
	if c.rule == UnmaskedTail {
		span = func(call *read.Call, r int) (int64, int64) {
			lo, hi := call.Indptr[r], call.Indptr[r+1]
			return lo, min(lo+(hi-lo+Tile-1)/Tile*Tile, int64(len(call.Tokens)))
		}
	}
	cpuread.Run(call, keys, span)
	for i, s := range call.OutSlots {
		binary.LittleEndian.PutUint64(mem[a.outSlots+8*i:], uint64(s))
		binary.LittleEndian.PutUint32(mem[a.outScores+4*i:], math.Float32bits(call.OutScores[i]))
	}
	return mem
}

// gpu runs the CUDA read on a device copy of the arena and returns it.
func (a *hostArena) gpu(t *testing.T, dev *cuda.Device, c gpuCase) []byte {
	base, err := dev.Alloc(len(a.mem))
	must(t, err)
	defer dev.Free(base)
	must(t, dev.HtoD(base, a.mem))
	s, err := dev.NewStream()
	must(t, err)
	defer s.Destroy()
	call := &read.DeviceCall{Pool: sdk.Pool{Name: c.name, Slots: gpuSlots, Base: a.base, Layout: sdk.Layout{HeadDim: gpuD, PageSize: gpuP}},
		Device: dev, Stream: s, Arena: base, Requests: a.requests, K: a.k, TokenCount: a.tokenCount,
		Queries: base.Add(a.queries), Indptr: base.Add(a.indptr), Tokens: base.Add(a.tokens),
		OutSlots: base.Add(a.outSlots), OutScores: base.Add(a.outScores)}
	var k Kernels
	must(t, k.Read(call, Spec{Name: "test/" + c.name, Kind: c.kind, HeadDim: gpuD, Values: c.values, Scales: c.scales, Rule: c.rule}))
	must(t, s.Sync())
	out := make([]byte, len(a.mem))
	must(t, dev.DtoH(out, base))
	return out
}

// TestKernelMatchesCPU: the CUDA read returns the CPU read's slots, in the
// same order and padding, with scores within float32 summation error,
// for every layout and rule; a correct read leaves the pool alone and the
// scratch mutant does not.
func TestKernelMatchesCPU(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no CUDA driver (%v): run ./scripts/gpu-test on a GPU machine", err)
	}
	dev, err := cuda.Open(0)
	must(t, err)
	defer dev.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range gpuCases(rng) {
		a := newArena(rng, c)
		want, got := a.cpu(c), a.gpu(t, dev, c)
		compareOutputs(t, c, a, want, got)
		poolSame := slices.Equal(got[:a.queries], a.mem[:a.queries])
		if poolSame != (c.rule != Scratch) {
			t.Errorf("%s rule %d: pool unchanged = %v", c.name, c.rule, poolSame)
		}
		if !slices.Equal(got[a.queries:a.outSlots], a.mem[a.queries:a.outSlots]) {
			t.Errorf("%s rule %d: the inputs changed", c.name, c.rule)
		}
	}
}

// TestSharedRangeSpreadsNaN: a NaN in request 2's query makes every other
// request's scores NaN under the nan-shared-range rule, and none of them
// under the correct kernel.
func TestSharedRangeSpreadsNaN(t *testing.T) {
	if err := cuda.Available(); err != nil {
		t.Skipf("no CUDA driver (%v): run ./scripts/gpu-test on a GPU machine", err)
	}
	dev, err := cuda.Open(0)
	must(t, err)
	defer dev.Close()
	rng := rand.New(rand.NewPCG(9, 10))
	bf16 := cpustore.Rows{Stride: 2 * gpuD, ValueBytes: 2 * gpuD}
	for _, rule := range []Rule{Correct, SharedRange} {
		c := gpuCase{"bf16 nan query", BF16, bf16, bf16, rule, 4, [][]int64{randomList(rng, 6), randomList(rng, 3), randomList(rng, 5)}}
		a := newArena(rng, c)
		binary.LittleEndian.PutUint16(a.mem[a.queries+2*(2*gpuD+5):], 0x7fc0) // request 2, element 5: NaN
		got := a.gpu(t, dev, c)
		for r := range 2 {
			_, scores := a.result(got, r)
			if nan := slices.ContainsFunc(scores[:3], func(f float32) bool { return f != f }); nan != (rule == SharedRange) {
				t.Errorf("rule %d: request %d's scores %v: NaN %v", rule, r, scores, nan)
			}
		}
	}
}

// compareOutputs wants the same padding, rank-wise scores within float32
// summation error, and each GPU slot's score its CPU score; a slot the CPU
// did not return must be a near tie with the CPU's last result (the two
// sum in different orders, so near ties may fall either way).
func compareOutputs(t *testing.T, c gpuCase, a *hostArena, want, got []byte) {
	t.Helper()
	for r := range a.requests {
		ws, wf := a.result(want, r)
		gs, gf := a.result(got, r)
		byCPU := map[int64]float32{}
		for i, s := range ws {
			byCPU[s] = wf[i]
		}
		for i := range ws {
			cpu, ok := byCPU[gs[i]]
			switch {
			case (ws[i] == -1) != (gs[i] == -1):
				t.Fatalf("%s rule %d k %d: request %d rank %d: cpu slot %d, gpu slot %d", c.name, c.rule, a.k, r, i, ws[i], gs[i])
			case !close32(wf[i], gf[i]):
				t.Fatalf("%s rule %d k %d: request %d rank %d: cpu score %v, gpu score %v", c.name, c.rule, a.k, r, i, wf[i], gf[i])
			case ok && !close32(cpu, gf[i]):
				t.Fatalf("%s rule %d: request %d: slot %d scores %v on the cpu, %v on the gpu", c.name, c.rule, r, gs[i], cpu, gf[i])
			case !ok && !close32(wf[len(wf)-1], gf[i]):
				t.Fatalf("%s rule %d: request %d rank %d: gpu slot %d (%v) is not among the cpu's results and no near tie of its last (%v)",
					c.name, c.rule, r, i, gs[i], gf[i], wf[len(wf)-1])
			}
		}
	}
}

// result is request r's out windows in an arena image.
func (a *hostArena) result(mem []byte, r int) ([]int64, []float32) {
	slots, scores := make([]int64, a.k), make([]float32, a.k)
	for i := range a.k {
		j := r*a.k + i
		slots[i] = int64(binary.LittleEndian.Uint64(mem[a.outSlots+8*j:]))
		scores[i] = math.Float32frombits(binary.LittleEndian.Uint32(mem[a.outScores+4*j:]))
	}
	return slots, scores
}

func close32(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Abs(float64(a)-float64(b)) <= 1e-4+1e-5*math.Abs(float64(a))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestArenaKeysFinite: the arenas TestKernelMatchesCPU reads hold no
// e4m3 NaN code and no non-finite scale in any listed key, scales written
// for another geometry among the values included (scale-stride): the
// nan-shared-range rule matches the CPU read on finite scores only, and
// one NaN code made its every score NaN on an H100. Runs on the CPU.
func TestArenaKeysFinite(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8)) // TestKernelMatchesCPU's draws
	for _, c := range gpuCases(rng) {
		a := newArena(rng, c)
		if c.kind != FP8 {
			continue
		}
		for _, l := range c.lists {
			for _, s := range l {
				vo, _ := c.values.Offsets(s)
				for i, b := range a.mem[a.base+vo : a.base+vo+gpuD] {
					if b&0x7f == 0x7f {
						t.Fatalf("%s: slot %d element %d is e4m3 NaN code %#x", c.name, s, i, b)
					}
				}
				_, so := c.scales.Offsets(s)
				if f := math.Float32frombits(binary.LittleEndian.Uint32(a.mem[a.base+so:])); math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					t.Fatalf("%s: slot %d scale %v", c.name, s, f)
				}
			}
		}
	}
}

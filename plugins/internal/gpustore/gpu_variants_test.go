package gpustore

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/plugins/internal/cpustore"
)

// VariantsEnv runs TestKernelVariants (it takes a minute of GPU time and
// prints a table; it decides DefaultBF16 and DefaultFP8).
const VariantsEnv = "KVHARNESS_GPU_VARIANTS"

// variantsChildEnv carries the parent's IPC handle to the child process;
// variantsSharedEnv the size of the parent's VMM buffer, whose file
// descriptor the child inherits as fd 3.
const (
	variantsChildEnv  = "KVHARNESS_GPUSTORE_VARIANTS_IPC"
	variantsSharedEnv = "KVHARNESS_GPUSTORE_VARIANTS_SHARED"
)

// VariantsOnlyEnv restricts TestKernelVariants to the variants whose name
// matches it (a regular expression); VariantsRoundsEnv runs the child that
// many times, each mapping the parent's buffers anew.
const (
	VariantsOnlyEnv   = "KVHARNESS_GPU_VARIANTS_ONLY"
	VariantsRoundsEnv = "KVHARNESS_GPU_VARIANTS_ROUNDS"
)

// VariantsRotateEnv, a number N ≥ 2, adds a column that rotates over N
// local copies of the staged data at 262,144 rows: what a kernel costs
// when the previous launch left nothing of its rows or slots in L2.
const VariantsRotateEnv = "KVHARNESS_GPU_VARIANTS_ROTATE"

type variant struct {
	name string
	kind Kind
	t    Tuning
}

func with(t Tuning, edit func(*Tuning)) Tuning {
	edit(&t)
	return t
}

// benchVariants are the tunings the bench compares. Each stores the same
// bytes (checked against the CPU reference in the run).
func benchVariants() []variant {
	bt := func(blk, rpt int) Tuning { return Tuning{BlockThreads: blk, RowsPerThread: rpt} }
	ft := func(lanes, elems, rpt, blk int) Tuning {
		return Tuning{BlockThreads: blk, RowsPerThread: rpt, FP8Lanes: lanes, FP8Elems: elems, FP8Pair: true}
	}
	b := func(name string, t Tuning) variant { return variant{name, BF16, t} }
	f := func(name string, t Tuning) variant { return variant{name, FP8, t} }
	return []variant{
		b("b-r2-256", bt(256, 2)),
		b("b-legacy", with(bt(256, 2), func(t *Tuning) { t.LoadHint, t.StoreHint = 1, 1 })),
		b("b-r1-256", bt(256, 1)),
		b("b-r4-256", bt(256, 4)),
		b("b-r8-256", bt(256, 8)),
		b("b-r1-128", bt(128, 1)),
		b("b-r2-128", bt(128, 2)),
		b("b-r2-512", bt(512, 2)),
		b("b-r4-512", bt(512, 4)),
		b("b-r2-1024", bt(1024, 2)),
		b("b-r4-1024", bt(1024, 4)),
		b("b-r8-1024", bt(1024, 8)),
		b("b-r4-1024-stcs", with(bt(1024, 4), func(t *Tuning) { t.StoreHint = 1 })),
		b("b-r4-1024-ldnc", with(bt(1024, 4), func(t *Tuning) { t.LoadHint = 2 })),
		b("b-r1-256-ldef", with(bt(256, 1), func(t *Tuning) { t.LoadHint = 4 })),
		b("b-r1-256-stef", with(bt(256, 1), func(t *Tuning) { t.StoreHint = 3 })),
		b("b-r1-256-stel", with(bt(256, 1), func(t *Tuning) { t.StoreHint = 4 })),
		b("b-r1-256-ldef-stel", with(bt(256, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 4 })),
		b("b-r1-256-ldef-stef", with(bt(256, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 3 })),
		b("b-r1-256-ldef-st2", with(bt(256, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 2 })),
		b("b-r1-256-ldef-stcs", with(bt(256, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 1 })),
		b("b-r1-128-ldef-stel", with(bt(128, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 4 })),
		b("b-r1-512-ldef-stel", with(bt(512, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 4 })),
		b("b-r2-256-ldef-stel", with(bt(256, 2), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 4 })),
		b("b-r2-1024-ldef-stel", with(bt(1024, 2), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 4 })),
		b("b-r4-256-ldef-stel", with(bt(256, 4), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 4 })),
		b("b-r1-128-ldef-stef", with(bt(128, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 3 })),
		b("b-r1-512-ldef-stef", with(bt(512, 1), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 3 })),
		b("b-r2-256-ldef-stef", with(bt(256, 2), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 3 })),
		b("b-r2-1024-ldef-stef", with(bt(1024, 2), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 3 })),
		b("b-r4-256-ldef-stef", with(bt(256, 4), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 3 })),
		b("b-r4-1024-ldef-stef", with(bt(1024, 4), func(t *Tuning) { t.LoadHint, t.StoreHint = 4, 3 })),

		f("f-legacy", Tuning{BlockThreads: 256, RowsPerThread: 4, FP8Lanes: 32, FP8Elems: 4, LoadHint: 1, StoreHint: 1}),
		f("f-l8-r2-256", ft(8, 8, 2, 256)),
		f("f-l8-r1-256", ft(8, 8, 1, 256)),
		f("f-l8-r1-128", ft(8, 8, 1, 128)),
		f("f-l8-r1-64", ft(8, 8, 1, 64)),
		f("f-l8-r1-512", ft(8, 8, 1, 512)),
		f("f-l16-r1-256", ft(16, 8, 1, 256)),
		f("f-l16-r1-128", ft(16, 8, 1, 128)),
		f("f-l16-r2-256", ft(16, 8, 2, 256)),
		f("f-l16-r2-128", ft(16, 8, 2, 128)),
		f("f-l32e4-r1-256", ft(32, 4, 1, 256)),
		f("f-l32e4-r1-128", ft(32, 4, 1, 128)),
		f("f-l32e4-r2-256", ft(32, 4, 2, 256)),
		f("f-l16e4-r1-128", ft(16, 4, 1, 128)),
		f("f-l8-r1-128-fmax", with(ft(8, 8, 1, 128), func(t *Tuning) { t.FP8FMax = true })),
		f("f-l16-r1-128-fmax", with(ft(16, 8, 1, 128), func(t *Tuning) { t.FP8FMax = true })),
		f("f-l8-r1-128-div1", with(ft(8, 8, 1, 128), func(t *Tuning) { t.FP8Div = 1 })),
		f("f-l16-r1-128-div1", with(ft(16, 8, 1, 128), func(t *Tuning) { t.FP8Div = 1 })),
		f("f-l8-r1-128-div2", with(ft(8, 8, 1, 128), func(t *Tuning) { t.FP8Div = 2 })),
		f("f-l8-r1-128-nopair", with(ft(8, 8, 1, 128), func(t *Tuning) { t.FP8Pair = false })),
		f("f-l8-r1-128-fmax-ldef-stel", with(ft(8, 8, 1, 128), func(t *Tuning) { t.FP8FMax, t.LoadHint, t.StoreHint = true, 4, 4 })),
		f("f-l8-r1-128-fmax-ldef-stef", with(ft(8, 8, 1, 128), func(t *Tuning) { t.FP8FMax, t.LoadHint, t.StoreHint = true, 4, 3 })),
	}
}

// TestKernelVariants times every bench variant on a 1 Mi-slot bf16 pool and
// an fp8-paged pool of the same slots, storing 262,144 rows into random
// distinct slots (and 32,768 and 512 of them), against a device copy of
// the same bytes; and checks each variant's pool against the CPU's. The
// timing runs in a child process that opened this one's buffer through
// CUDA IPC, as a plugin does, and times each kernel there on both that
// buffer and one of its own: the A/B of IPC memory against local memory.
func TestKernelVariants(t *testing.T) {
	if os.Getenv(VariantsEnv) == "" {
		t.Skipf("set %s=1 to time the kernel variants (about a minute on the GPU)", VariantsEnv)
	}
	d := openDevice(t)
	l := newBenchLayout()
	p := alloc(t, d, l.size)
	must(t, d.Memset8(p, 0, l.size))
	h, err := d.IpcHandle(p)
	must(t, err)
	shared, err := d.AllocShared(l.size)
	must(t, err)
	defer shared.Free()
	must(t, d.Memset8(shared.Ptr(), 0, l.size))
	rounds, _ := strconv.Atoi(os.Getenv(VariantsRoundsEnv))
	for round := range max(rounds, 1) {
		fd, err := shared.ExportFD()
		must(t, err)
		f := os.NewFile(uintptr(fd), "shared")
		cmd := exec.Command(os.Args[0], "-test.run=^TestKernelVariantsChild$", "-test.v", "-test.timeout=10m")
		cmd.Env = append(os.Environ(), variantsChildEnv+"="+hex.EncodeToString(h[:]),
			variantsSharedEnv+"="+strconv.Itoa(shared.Size()))
		cmd.ExtraFiles = []*os.File{f}
		out, err := cmd.CombinedOutput()
		f.Close()
		t.Logf("child, round %d:\n%s", round, out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestKernelVariantsChild") {
			t.Fatalf("variant child failed: %v", err)
		}
	}
}

// benchData is the staged input and the CPU's pools after storing the
// mixed rows.
type benchData struct {
	rows, mixed  []uint16
	loc, sorted  []int64
	dense, ident []int64 // slots 0..benchTokens-1, shuffled and in order
	pages        []int64 // whole pages of benchPage slots, in a random order
	bf16, fp8    []byte  // the pools after storing the mixed rows, poisoned elsewhere
	poison       byte
}

func newBenchData() *benchData {
	rng := rand.New(rand.NewPCG(11, 17))
	b := &benchData{rows: make([]uint16, benchTokens*benchDim), mixed: make([]uint16, benchTokens*benchDim), poison: 0x5a}
	bf := func(x float64) uint16 { return uint16(math.Float32bits(float32(x)) >> 16) }
	for i := range b.rows {
		b.rows[i] = bf(rng.NormFloat64())
	}
	for i := range benchTokens {
		r := b.mixed[i*benchDim : (i+1)*benchDim]
		switch k := rng.IntN(200); {
		case k == 0: // raw bit patterns: NaNs, infinities, subnormals
			for j := range r {
				r[j] = uint16(rng.Uint32())
			}
		case k == 1: // zeros of either sign: the scale floor
			for j := range r {
				r[j] = uint16(rng.IntN(2)) << 15
			}
		case k == 2: // tiny values with a spike
			for j := range r {
				r[j] = bf(rng.NormFloat64() * 1e-30)
			}
			r[rng.IntN(benchDim)] = bf(rng.NormFloat64() * 1e3)
		default:
			scale := math.Pow(10, rng.Float64()*6-3)
			for j := range r {
				r[j] = bf(rng.NormFloat64() * scale)
			}
		}
	}
	for _, s := range rng.Perm(benchSlots)[:benchTokens] {
		b.loc = append(b.loc, int64(s))
	}
	b.sorted = slices.Sorted(slices.Values(b.loc))
	for i, s := range rng.Perm(benchTokens) {
		b.dense, b.ident = append(b.dense, int64(s)), append(b.ident, int64(i))
	}
	for _, p := range rng.Perm(benchSlots / benchPage)[:benchTokens/benchPage] {
		for j := range benchPage {
			b.pages = append(b.pages, int64(p*benchPage+j))
		}
	}
	l := newBenchLayout()
	b.bf16 = slices.Repeat([]byte{b.poison}, l.bf16Bytes())
	b.fp8 = slices.Repeat([]byte{b.poison}, l.fp8Bytes())
	rowGeo := cpustore.Rows{Stride: 2 * benchDim, ValueBytes: 2 * benchDim}
	for i, s := range b.loc {
		row := b.mixed[i*benchDim : (i+1)*benchDim]
		v, _ := rowGeo.Offsets(s)
		cpustore.PutBF16(b.bf16, v, row)
		v, sc := benchFP8Geometry.Offsets(s)
		cpustore.Exact.PutFP8(b.fp8, v, sc, row)
	}
	return b
}

// stage uploads the bench data into every memory of r, the CPU's pools
// for the checks, and loads the auxiliary kernels.
func (r *benchRig) stage(t *testing.T) {
	d := r.d
	start := time.Now()
	data := newBenchData()
	t.Logf("data and CPU reference: %v", time.Since(start))
	for _, m := range append(slices.Clone(r.mems), r.rot...) {
		must(t, d.HtoD(m.base.Add(r.l.rows), bytesOf(data.rows)))
		must(t, d.HtoD(m.base.Add(r.l.rowsMixed), bytesOf(data.mixed)))
		must(t, d.HtoD(m.base.Add(r.l.loc), bytesOf(data.loc)))
		must(t, d.HtoD(m.base.Add(r.l.locSorted), bytesOf(data.sorted)))
		must(t, d.HtoD(m.base.Add(r.l.locDense), bytesOf(data.dense)))
		must(t, d.HtoD(m.base.Add(r.l.locIdentity), bytesOf(data.ident)))
		must(t, d.HtoD(m.base.Add(r.l.locPages), bytesOf(data.pages)))
	}
	r.refBF16, r.refFP8 = alloc(t, d, len(data.bf16)), alloc(t, d, len(data.fp8))
	must(t, d.HtoD(r.refBF16, data.bf16))
	must(t, d.HtoD(r.refFP8, data.fp8))
	r.scratch, r.counter = alloc(t, d, benchTokens*2*benchDim), alloc(t, d, 256)
	m, err := d.Compile("gpustore-aux", auxSource+sdk.HoldSource+"\nextern \"C\" __global__ void aux_empty() {}\n")
	must(t, err)
	r.probe = map[string]*cuda.Function{}
	for _, name := range []string{"aux_scatter", "aux_scatter_ef", "aux_gather", "aux_bulk"} {
		r.probe[name], err = m.Function(name)
		must(t, err)
	}
	for _, fn := range []struct {
		f    **cuda.Function
		name string
	}{{&r.cmp, "aux_cmp"}, {&r.hold, sdk.HoldEntry}, {&r.empty, "aux_empty"}} {
		*fn.f, err = m.Function(fn.name)
		must(t, err)
	}
	r.s, err = d.NewStream()
	must(t, err)
	for i := range r.ev {
		r.ev[i], err = d.NewEvent()
		must(t, err)
	}
}

// TestDefaultTuningsExact: every tier of the default tunings (the kernels
// a plugin runs, by capacity) stores 262,144 mixed rows (NaN, infinities,
// zeros, tiny values) exactly as the CPU does.
func TestDefaultTuningsExact(t *testing.T) {
	d := openDevice(t)
	r := &benchRig{d: d, l: newBenchLayout()}
	r.mems = []benchMem{{"local", alloc(t, d, r.l.size)}}
	r.stage(t)
	var k Kernels
	for _, kind := range []Kind{BF16, FP8} {
		ts, err := tuningsOf(kind)
		must(t, err)
		for _, b := range ts.tiers() {
			v := variant{name: fmt.Sprintf("default-%d-rows", b), kind: kind, t: ts.pick(b)}
			f, err := k.Function(d, r.spec(v))
			must(t, err)
			bad, err := r.check(v, f, r.spec(v))
			must(t, err)
			if bad != 0 {
				t.Errorf("kind %d, tuning for %d rows (%v): %d words of the pool differ from the CPU", kind, b, v.t, bad)
			}
		}
	}
}

// benchRig is the child's device state.
type benchRig struct {
	d          *cuda.Device
	s          *cuda.Stream
	ev         [2]*cuda.Event
	l          benchLayout
	mems       []benchMem
	rot        []benchMem // local copies of the staged data for the rotating column
	refBF16    cuda.Ptr
	refFP8     cuda.Ptr
	scratch    cuda.Ptr // the copy's destination
	counter    cuda.Ptr
	cmp, hold  *cuda.Function
	empty      *cuda.Function
	probe      map[string]*cuda.Function // aux_scatter(_ef), aux_gather, aux_bulk
	batch, rep int
}

type benchMem struct {
	name string
	base cuda.Ptr
}

func TestKernelVariantsChild(t *testing.T) {
	hs := os.Getenv(variantsChildEnv)
	if hs == "" {
		t.Skip("runs only as the child process of TestKernelVariants")
	}
	raw, err := hex.DecodeString(hs)
	if err != nil || len(raw) != 64 {
		t.Fatalf("bad handle %q: %v", hs, err)
	}
	d := openDevice(t)
	r := &benchRig{d: d, l: newBenchLayout(), batch: 20, rep: 9}
	ipc, err := d.IpcOpen([64]byte(raw))
	must(t, err)
	t.Cleanup(func() { d.IpcClose(ipc) })
	local := alloc(t, d, r.l.size)
	r.mems = []benchMem{{"local", local}, {"ipc", ipc}}
	if v := os.Getenv(variantsSharedEnv); v != "" {
		size, err := strconv.Atoi(v)
		must(t, err)
		imported, err := d.ImportShared(3, size)
		must(t, err)
		t.Cleanup(func() { imported.Free() })
		own, err := d.AllocShared(r.l.size)
		must(t, err)
		t.Cleanup(func() { own.Free() })
		r.mems = append(r.mems, benchMem{"vmm", imported.Ptr()}, benchMem{"own-vmm", own.Ptr()})
	}
	if n, _ := strconv.Atoi(os.Getenv(VariantsRotateEnv)); n > 1 {
		for i := range n {
			r.rot = append(r.rot, benchMem{fmt.Sprintf("rot%d", i), alloc(t, d, r.l.size)})
		}
	}
	t.Logf("IPC mapping at %#x (%d KiB into a 2 MiB page), local allocation at %#x (%d KiB)",
		uint64(ipc), uint64(ipc)%(2<<20)>>10, uint64(local), uint64(local)%(2<<20)>>10)
	r.stage(t)

	// Columns: gaussian rows at each size on local then IPC memory; then at
	// the largest size mixed rows (local), sorted slots (local, IPC).
	cols := []benchCol{}
	for _, mem := range r.mems {
		for _, n := range benchSizes {
			cols = append(cols, benchCol{mem: mem, n: n, rows: r.l.rows, loc: r.l.loc})
		}
	}
	cols = append(cols, benchCol{mem: r.mems[0], n: benchTokens, rows: r.l.rowsMixed, loc: r.l.loc, label: "mixed"},
		benchCol{mem: r.mems[0], n: benchTokens, rows: r.l.rows, loc: r.l.locSorted, label: "sorted"},
		benchCol{mem: r.mems[1], n: benchTokens, rows: r.l.rows, loc: r.l.locSorted, label: "sorted"},
		// Where a bf16 store's time goes beyond the copy's: the same rows
		// into the pool's first quarter in a random order, and in order.
		benchCol{mem: r.mems[0], n: benchTokens, rows: r.l.rows, loc: r.l.locDense, label: "dense"},
		benchCol{mem: r.mems[0], n: benchTokens, rows: r.l.rows, loc: r.l.locIdentity, label: "identity"},
		// Whole pages in a random order, as a paged allocator hands out.
		benchCol{mem: r.mems[0], n: benchTokens, rows: r.l.rows, loc: r.l.locPages, label: "pages"})
	if len(r.rot) > 0 {
		cols = append(cols, benchCol{mem: r.rot[0], rot: r.rot, n: benchTokens, rows: r.l.rows, loc: r.l.loc, label: "rotating"})
	}
	header := fmt.Sprintf("%-20s", "µs per launch")
	for _, c := range cols {
		header += fmt.Sprintf(" %9s", c.name())
	}
	table := []string{header}
	row := func(name string, us []float64, tail string) {
		line := fmt.Sprintf("%-20s", name)
		for _, v := range us {
			line += fmt.Sprintf(" %9.2f", v)
		}
		table = append(table, line+"  "+tail)
	}
	var copyUS, emptyUS []float64
	for _, c := range cols {
		v, err := r.time(c.each(func(cx *cuda.Ctx, m benchMem) error {
			dst := r.scratch
			if len(c.rot) > 0 { // each set's own destination: nothing left in L2 by the previous launch
				dst = m.base
			}
			return cx.DtoDAsync(r.s, dst, m.base.Add(c.rows), c.n*2*benchDim)
		}))
		must(t, err)
		copyUS = append(copyUS, v)
		v, err = r.time(func(cx *cuda.Ctx) error { return cx.Launch(r.empty, r.s, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0) })
		must(t, err)
		emptyUS = append(emptyUS, v)
	}
	row("copy n×256 B", copyUS, "")
	row("empty kernel", emptyUS, "")

	variants := benchVariants()
	for _, name := range []string{"b-r2-256", "f-l8-r2-256"} { // the baselines again: drift
		variants = append(variants, variants[slices.IndexFunc(variants, func(v variant) bool { return v.name == name })])
	}
	if only := os.Getenv(VariantsOnlyEnv); only != "" {
		re := regexp.MustCompile(only)
		variants = slices.DeleteFunc(variants, func(v variant) bool { return !re.MatchString(v.name) })
	}
	// Compile every variant first, concurrently (NVRTC is the slow part).
	fns, errs := make([]*cuda.Function, len(variants)), make([]error, len(variants))
	cstart := time.Now()
	var wg sync.WaitGroup
	var k Kernels
	for i, v := range variants {
		wg.Go(func() { fns[i], errs[i] = k.Function(d, r.spec(v)) })
	}
	wg.Wait()
	t.Logf("compiled %d variants in %v", len(variants), time.Since(cstart))
	results := map[string][]float64{}
	for i, v := range variants {
		s, f := r.spec(v), fns[i]
		if err := errs[i]; err != nil {
			table = append(table, fmt.Sprintf("%-20s compile failed: %v", v.name, strings.SplitN(err.Error(), "\n", 4)))
			continue
		}
		bad, err := r.check(v, f, s)
		if err != nil {
			table = append(table, fmt.Sprintf("%-20s check failed: %v", v.name, err))
			t.Errorf("%s: %v", v.name, err)
			continue
		}
		var us []float64
		for _, c := range cols {
			grid, block := s.Shape(c.n)
			val := math.NaN()
			if err = r.setValids(c); err == nil {
				val, err = r.time(c.each(func(cx *cuda.Ctx, m benchMem) error {
					return cx.Launch(f, r.s, grid, block, 0, r.args(v, c.on(m))...)
				}))
			}
			if err != nil {
				t.Errorf("%s: %v", v.name, err)
			}
			us = append(us, val)
		}
		verdict := "exact"
		if bad != 0 {
			verdict = fmt.Sprintf("WRONG: %d words differ from the CPU", bad)
			t.Errorf("%s (%s): %d words of the pool differ from the CPU reference", v.name, v.t, bad)
		} else if _, seen := results[v.name]; !seen {
			results[v.name] = us
		}
		row(v.name, us, verdict+"  "+v.t.String())
	}
	table = append(table, r.probes(t, cols)...)
	best := pickTunings(t, cols, results)
	t.Logf("median of %d batches of %d launches behind a hold, gaussian rows unless named\n%s\nchosen: %s=%q",
		r.rep, r.batch, strings.Join(table, "\n"), TuningEnv, best)
	if path := os.Getenv(VariantsBestEnv); path != "" {
		must(t, os.WriteFile(path, []byte(TuningEnv+"='"+best+"'\n"), 0o644))
	}
}

// benchSizes are the batch sizes every variant is timed at.
var benchSizes = []int{benchTokens, 32768, 4096, 512}

// VariantsBestEnv names a file TestKernelVariants writes the chosen
// tunings to, as a shell assignment of TuningEnv.
const VariantsBestEnv = "KVHARNESS_VARIANTS_BEST"

// benchCol is one timing column: n rows from a staged set into a memory.
type benchCol struct {
	mem       benchMem
	rot       []benchMem // when set, each launch takes the next of these memories
	n         int
	rows, loc int // arena offsets
	label     string
}

// on is c on memory m.
func (c benchCol) on(m benchMem) benchCol {
	c.mem = m
	return c
}

// each is a launch on c's memory; for a rotating column every call moves
// to the next memory, so that no launch finds the rows, slots or
// destinations of the one before it in L2, as in serving, where each
// store has rows and slots of its own.
func (c benchCol) each(launch func(cx *cuda.Ctx, m benchMem) error) func(*cuda.Ctx) error {
	mems := c.rot
	if len(mems) == 0 {
		mems = []benchMem{c.mem}
	}
	i := 0
	return func(cx *cuda.Ctx) error {
		m := mems[i%len(mems)]
		i++
		return launch(cx, m)
	}
}

func (c benchCol) name() string {
	s := fmt.Sprintf("%s%d", c.mem.name[:1], c.n)
	if c.label != "" {
		s = c.label[:3] + "-" + s
	}
	return s
}

// pickTunings chooses, per kind, on the memory a plugin maps (the VMM
// import, else the IPC mapping): the Streaming tuning (fastest at the
// largest size; in the rotating column when there is one, where no launch
// finds the last one's data in L2, as in serving: that column is local
// memory, which runs as the VMM import does), the Large one (fastest
// at 32,768 rows), the Small one (fastest at 512 rows) and the largest
// size up to which Small is at least as fast as Large. Streaming applies
// from 131,072 rows, where rows and destinations outgrow the H200's L2,
// when it differs from Large.
func pickTunings(t *testing.T, cols []benchCol, results map[string][]float64) string {
	mem := "ipc"
	if slices.ContainsFunc(cols, func(c benchCol) bool { return c.mem.name == "vmm" }) {
		mem = "vmm"
	}
	at := func(n int) int {
		return slices.IndexFunc(cols, func(c benchCol) bool { return c.mem.name == mem && c.n == n && c.label == "" })
	}
	var parts []string
	for _, kind := range []Kind{BF16, FP8} {
		best := func(score func(us []float64) float64) (variant, bool) {
			var out variant
			min := math.Inf(1)
			for _, v := range benchVariants() {
				us, ok := results[v.name]
				if ok && v.kind == kind && !strings.Contains(v.name, "legacy") && score(us) < min {
					min, out = score(us), v
				}
			}
			return out, out.name != ""
		}
		largest := at(benchTokens)
		if rot := slices.IndexFunc(cols, func(c benchCol) bool { return len(c.rot) > 0 }); rot >= 0 {
			largest = rot
		}
		streaming, ok1 := best(func(us []float64) float64 { return us[largest] })
		large, ok2 := best(func(us []float64) float64 { return us[at(32768)] + 0.01*us[at(benchTokens)] })
		small, ok3 := best(func(us []float64) float64 { return us[at(512)] + 0.01*us[at(4096)] })
		if !ok1 || !ok2 || !ok3 {
			if os.Getenv(VariantsOnlyEnv) == "" {
				t.Errorf("no exact variant of kind %d to choose", kind)
			}
			continue
		}
		ts := Tunings{Small: small.t, Large: large.t, SmallMax: 512}
		for _, n := range []int{4096, 32768} {
			if results[small.name][at(n)] > results[large.name][at(n)] {
				break
			}
			ts.SmallMax = n
		}
		if streaming.t != large.t {
			ts.Streaming, ts.StreamingMin = streaming.t, 131072
		}
		name := map[Kind]string{BF16: "bf16", FP8: "fp8"}[kind]
		t.Logf("%s on %s memory: small %s (up to %d rows), large %s, streaming %s", name, mem, small.name, ts.SmallMax, large.name, streaming.name)
		parts = append(parts, name+"="+ts.String())
	}
	return strings.Join(parts, ";")
}

func (r *benchRig) spec(v variant) Spec {
	s := Spec{Name: "bench/" + v.name, Source: benchRuleSource, Entry: "bench_bf16", Kind: v.kind, HeadDim: benchDim,
		PageSize: benchPage, Geometry: cpustore.Rows{Stride: 2 * benchDim, ValueBytes: 2 * benchDim}, Tune: &v.t}
	if v.kind == FP8 {
		s.Entry, s.Geometry = "bench_fp8", benchFP8Geometry
	}
	return s
}

func (r *benchRig) args(v variant, c benchCol) []any {
	pool := c.mem.base.Add(0)
	if v.kind == FP8 {
		pool = c.mem.base.Add(r.l.fp8Pool)
	}
	return []any{pool, c.mem.base.Add(c.rows), c.mem.base.Add(c.loc), c.mem.base.Add(r.l.valid), int32(c.n), int64(benchSlots)}
}

// setValids sets the valid count in every memory c launches on.
func (r *benchRig) setValids(c benchCol) error {
	for _, m := range append([]benchMem{c.mem}, c.rot...) {
		if err := r.setValid(m.base, c.n); err != nil {
			return err
		}
	}
	return nil
}

func (r *benchRig) setValid(base cuda.Ptr, n int) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(n))
	return r.d.HtoD(base.Add(r.l.valid), b[:])
}

// check stores all mixed rows once into a poisoned pool in local memory
// and counts the 4-byte words that differ from the CPU's pool.
func (r *benchRig) check(v variant, f *cuda.Function, s Spec) (uint64, error) {
	grid, block := s.Shape(benchTokens)
	args := r.args(v, benchCol{mem: r.mems[0], n: benchTokens, rows: r.l.rowsMixed, loc: r.l.loc})
	return r.checkWith(v.kind, func(c *cuda.Ctx) error { return c.Launch(f, r.s, grid, block, 0, args...) })
}

// checkWith runs store, which stores the mixed rows into the local pool of
// kind, on a poisoned pool and counts the words that differ from the CPU's.
func (r *benchRig) checkWith(kind Kind, store func(c *cuda.Ctx) error) (uint64, error) {
	base := r.mems[0].base
	pool, ref, n := base.Add(0), r.refBF16, r.l.bf16Bytes()
	if kind == FP8 {
		pool, ref, n = base.Add(r.l.fp8Pool), r.refFP8, r.l.fp8Bytes()
	}
	if err := r.setValid(base, benchTokens); err != nil {
		return 0, err
	}
	var bad uint64
	err := r.d.Do(func(c *cuda.Ctx) error {
		errs := []error{
			c.Memset8Async(r.s, pool, 0x5a, n),
			c.Memset8Async(r.s, r.counter, 0, 8),
			store(c),
			c.Launch(r.cmp, r.s, cuda.Dim3{X: 1024}, cuda.Dim3{X: 256}, 0, pool, ref, uint64(n/16), r.counter),
			c.StreamSync(r.s),
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		var b [8]byte
		if err := c.DtoHAsync(r.s, b[:], r.counter); err != nil {
			return err
		}
		bad = binary.LittleEndian.Uint64(b[:])
		return nil
	})
	return bad, err
}

// time is the median µs per launch of r.rep batches of r.batch launches,
// each batch queued behind a hold kernel so that it runs back to back at
// the GPU's pace, all inside one Do.
func (r *benchRig) time(launch func(c *cuda.Ctx) error) (float64, error) {
	var us []float64
	err := r.d.Do(func(c *cuda.Ctx) error {
		for range 3 {
			if err := launch(c); err != nil {
				return err
			}
		}
		if err := c.StreamSync(r.s); err != nil {
			return err
		}
		hold := uint64(r.batch)*uint64(10*time.Microsecond) + uint64(20*time.Microsecond)
		for range r.rep {
			if err := c.Launch(r.hold, r.s, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, hold); err != nil {
				return err
			}
			if err := c.Record(r.ev[0], r.s); err != nil {
				return err
			}
			for range r.batch {
				if err := launch(c); err != nil {
					return err
				}
			}
			if err := c.Record(r.ev[1], r.s); err != nil {
				return err
			}
			el, err := c.Elapsed(r.ev[0], r.ev[1])
			if err != nil {
				return err
			}
			us = append(us, float64(el.Nanoseconds())/float64(r.batch)/1e3)
		}
		return nil
	})
	slices.Sort(us)
	if len(us) == 0 {
		return 0, err
	}
	return us[len(us)/2], err
}

// probes times the floor probes on every column: where a bf16 store's time
// goes. probe-scatter writes the column's slots and reads nothing but
// them; probe-gather reads its rows and slots and writes nothing; their
// sum against the store's time says whether reads and writes overlap, and
// the scatter's random columns against its identity one what random
// destinations cost the memory system alone. probe-bulk stores the rows
// through the tensor memory accelerator (sm_90), checked against the CPU.
func (r *benchRig) probes(t *testing.T, cols []benchCol) []string {
	var table []string
	gridOf := func(n, perBlock int) cuda.Dim3 { return cuda.Dim3{X: uint32((n + perBlock - 1) / perBlock)} }
	type probe struct {
		name   string
		launch func(c *cuda.Ctx, col benchCol) error
	}
	probes := []probe{
		{"probe-scatter", func(c *cuda.Ctx, col benchCol) error {
			return c.Launch(r.probe["aux_scatter"], r.s, gridOf(col.n, 16), cuda.Dim3{X: 256}, 0,
				col.mem.base.Add(0), col.mem.base.Add(col.loc), int32(col.n))
		}},
		{"probe-scatter-ef", func(c *cuda.Ctx, col benchCol) error { // evict-first stores
			return c.Launch(r.probe["aux_scatter_ef"], r.s, gridOf(col.n, 16), cuda.Dim3{X: 256}, 0,
				col.mem.base.Add(0), col.mem.base.Add(col.loc), int32(col.n))
		}},
		{"probe-gather", func(c *cuda.Ctx, col benchCol) error {
			return c.Launch(r.probe["aux_gather"], r.s, gridOf(col.n, 16), cuda.Dim3{X: 256}, 0,
				col.mem.base.Add(col.rows), col.mem.base.Add(col.loc), int32(col.n), r.counter)
		}},
		{"probe-bulk", func(c *cuda.Ctx, col benchCol) error {
			return c.Launch(r.probe["aux_bulk"], r.s, gridOf(col.n, 64), cuda.Dim3{X: 256}, 0,
				col.mem.base.Add(0), col.mem.base.Add(col.rows), col.mem.base.Add(col.loc), int32(col.n))
		}},
	}
	if only := os.Getenv(VariantsOnlyEnv); only != "" {
		re := regexp.MustCompile(only)
		probes = slices.DeleteFunc(probes, func(p probe) bool { return !re.MatchString(p.name) })
	}
	for _, p := range probes {
		verdict := "writes no row"
		if p.name == "probe-bulk" {
			col := benchCol{mem: r.mems[0], n: benchTokens, rows: r.l.rowsMixed, loc: r.l.loc}
			bad, err := r.checkWith(BF16, func(c *cuda.Ctx) error { return p.launch(c, col) })
			switch {
			case err != nil:
				t.Errorf("%s: %v", p.name, err)
				verdict = "check failed: " + err.Error()
			case bad != 0:
				t.Errorf("%s: %d words of the pool differ from the CPU reference", p.name, bad)
				verdict = fmt.Sprintf("WRONG: %d words differ from the CPU", bad)
			default:
				verdict = "exact"
			}
		}
		line := fmt.Sprintf("%-20s", p.name)
		for _, col := range cols {
			v, err := r.time(col.each(func(c *cuda.Ctx, m benchMem) error { return p.launch(c, col.on(m)) }))
			if err != nil {
				t.Errorf("%s on %s: %v", p.name, col.name(), err)
				v = math.NaN()
			}
			line += fmt.Sprintf(" %9.2f", v)
		}
		table = append(table, line+"  "+verdict)
	}
	return table
}

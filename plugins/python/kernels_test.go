package python

import (
	"cmp"
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/read"
	"github.com/kvharness/kvharness/harness/kernels/transfer"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/pool"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/target"
)

// step is one request sent to a Python plugin and its Go twin.
type step struct {
	name string
	do   func(*plugin.Plugin) error
}

// sameAnswers sends every step to both plugins and wants the same status
// code and message (plugin names masked).
func sameAnswers(t *testing.T, steps []step, py, gopl *plugin.Plugin) {
	t.Helper()
	for _, s := range steps {
		pc, pm := outcome(s.do(py), py.Name)
		gc, gm := outcome(s.do(gopl), gopl.Name)
		// The Go SDK wraps a status error in fmt.Errorf, which repeats the
		// code inside the message; the Python SDK does not.
		gm = strings.ReplaceAll(gm, "rpc error: code = InvalidArgument desc = ", "")
		if pc != gc || pm != gm {
			t.Errorf("%s: Python %v %q, Go %v %q", s.name, pc, pm, gc, gm)
		} else {
			t.Logf("%-32s %v %s", s.name, pc, pm)
		}
	}
}

func putInt64s(t *testing.T, mem arena.Memory, off int, vs ...int64) {
	t.Helper()
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	if err := mem.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// The Python SDK checks read requests as the Go SDK does: topkread
// (Python) and fusedstore's read kernel (Go) answer every request below
// with the same code and message, and a valid read with the same top k.
func TestReadValidationMatchesGoSDK(t *testing.T) {
	slowPython(t)
	dir := runDir(t)
	l := bf16(t)
	const slots = 256
	g, mem := sharedPools(t, dir, []pool.Spec{{Name: "read", Layout: l, Slots: slots}}, 64<<10)
	if err := mem.Fill(g.Regions[0].Span(), 7); err != nil {
		t.Fatal(err)
	}
	st := uint64(g.Staging.Off)
	queries, indptr, tokens := st, st+4096, st+8192
	outSlots, outScores := st+16384, st+32768
	if err := mem.Fill(pool.Window{Off: int(queries), Len: 4096}, 3); err != nil { // random bf16 queries
		t.Fatal(err)
	}
	putInt64s(t, mem, int(indptr), 0, 3, 3, 7)
	putInt64s(t, mem, int(tokens), 5, 9, 200, 1, 2, 3, 255)
	read := func(edit func(*kvpb.ReadRequest)) func(*plugin.Plugin) error {
		return func(p *plugin.Plugin) error {
			r := &kvpb.ReadRequest{Requests: 3, K: 4, QueriesOffset: queries, IndptrOffset: indptr, TokensOffset: tokens,
				OutSlotsOffset: outSlots, OutScoresOffset: outScores}
			edit(r)
			return read.Read(context.Background(), p, r)
		}
	}
	good := target.Request(arena.One(arena.HostShared, mem), g, "")
	attach := func(p *plugin.Plugin) error { _, err := p.Attach(context.Background(), p, good); return err }
	steps := []step{
		{"read before attach", read(func(*kvpb.ReadRequest) {})},
		{"attach", attach},
		{"read pool past the end", read(func(r *kvpb.ReadRequest) { r.Pool = 1 })},
		{"read too many results", read(func(r *kvpb.ReadRequest) { r.Requests, r.K = 1<<20, 1<<10 })},
		{"read queries outside staging", read(func(r *kvpb.ReadRequest) { r.QueriesOffset = st - 2 })},
		{"read indptr misaligned", read(func(r *kvpb.ReadRequest) { r.IndptrOffset = indptr + 4 })},
		{"read indptr not from 0", read(func(r *kvpb.ReadRequest) { r.IndptrOffset = indptr + 8; r.Requests = 2 })},
		{"read tokens outside staging", read(func(r *kvpb.ReadRequest) { r.TokensOffset = uint64(g.Staging.End() - 16) })},
		{"read out slots over queries", read(func(r *kvpb.ReadRequest) { r.OutSlotsOffset = queries })},
		{"read out scores over slots", read(func(r *kvpb.ReadRequest) { r.OutScoresOffset = outSlots + 8 })},
		{"read out scores misaligned", read(func(r *kvpb.ReadRequest) { r.OutScoresOffset = outScores + 2 })},
		{"read", read(func(*kvpb.ReadRequest) {})},
	}
	py := start(t, dir, filepath.Join("topkread", "kvharness-plugin.json"), "")
	gopl := start(t, dir, "fusedstore", "")
	sameAnswers(t, steps, py, gopl)

	// Bounds that decrease, and a token outside the pool, need other data.
	for _, s := range []struct {
		name  string
		bound []int64
		token int64
	}{{"read indptr decreasing", []int64{0, 3, 2, 7}, 1}, {"read token outside the pool", []int64{0, 3, 3, 7}, slots}, {"read token -1", []int64{0, 3, 3, 7}, -1}} {
		putInt64s(t, mem, int(indptr), s.bound...)
		putInt64s(t, mem, int(tokens)+8*3, s.token)
		sameAnswers(t, []step{{s.name, read(func(*kvpb.ReadRequest) {})}}, py, gopl)
	}
	putInt64s(t, mem, int(indptr), 0, 3, 3, 7)
	putInt64s(t, mem, int(tokens)+8*3, 1)

	// The same answer, slot for slot.
	results := func(p *plugin.Plugin) ([]byte, []float32) {
		if err := read(func(*kvpb.ReadRequest) {})(p); err != nil {
			t.Fatal(err)
		}
		b, f := make([]byte, 8*12), make([]byte, 4*12)
		mem.ReadAt(b, int(outSlots))
		mem.ReadAt(f, int(outScores))
		scores := make([]float32, 12)
		for i := range scores {
			scores[i] = math.Float32frombits(binary.LittleEndian.Uint32(f[4*i:]))
		}
		return b, scores
	}
	ps, pf := results(py)
	gs, gf := results(gopl)
	if string(ps) != string(gs) {
		t.Errorf("top slots: Python %v, Go %v", ps, gs)
	}
	for i := range pf {
		if pf[i] != gf[i] && !(math.IsNaN(float64(pf[i])) && math.IsNaN(float64(gf[i]))) &&
			math.Abs(float64(pf[i]-gf[i])) > 1e-5*math.Abs(float64(gf[i])) {
			t.Errorf("score %d: Python %v, Go %v", i, pf[i], gf[i])
		}
	}
}

// The Python SDK checks transfer requests as the Go SDK does, and
// pagetransfer (Python) builds the descriptors pdtransfer (Go) builds.
func TestTransferValidationMatchesGoSDK(t *testing.T) {
	slowPython(t)
	dir := runDir(t)
	l := bf16(t)
	fp8, err := layout.Builtin("fp8-paged", 128, 64)
	noErr(t, err)
	const slots = 8 * 64
	kv, idx, odd, mix := pd.Buffer{Name: "L0.kv"}, pd.Buffer{Name: "L0.indexk", Shift: 3}, pd.Buffer{Name: "L0.odd"}, pd.Buffer{Name: "L0.mix"}
	src, dst := pd.SideSrc, pd.SideDst
	g, mem := sharedPools(t, dir, []pool.Spec{
		kv.Pool(src, l, slots), kv.Pool(dst, l, slots),
		idx.Pool(src, fp8, slots), idx.Pool(dst, fp8, slots),
		odd.Pool(dst, fp8, slots), {Name: "case", Layout: l, Slots: slots},
		mix.Pool(src, l, slots), mix.Pool(dst, fp8, slots),
	}, 4096)
	room := &kvpb.Room{Id: 7, SrcPages: []uint64{0, 1, 2, 6}, DstPages: []uint64{4, 5, 6, 0}}
	send := func(edit func(*kvpb.TransferRequest)) func(*plugin.Plugin) error {
		return func(p *plugin.Plugin) error {
			r := &kvpb.TransferRequest{Buffers: []*kvpb.BufferPair{{SrcPool: 0, DstPool: 1}, {SrcPool: 2, DstPool: 3}},
				Rooms: []*kvpb.Room{room}}
			edit(r)
			_, err := transfer.Transfer(context.Background(), p, r)
			return err
		}
	}
	good := target.Request(arena.One(arena.HostShared, mem), g, "")
	steps := []step{
		{"transfer before attach", send(func(*kvpb.TransferRequest) {})},
		{"attach", func(p *plugin.Plugin) error { _, err := p.Attach(context.Background(), p, good); return err }},
		{"transfer of no buffers", send(func(r *kvpb.TransferRequest) { r.Buffers = nil })},
		{"transfer pool past the end", send(func(r *kvpb.TransferRequest) { r.Buffers[0].DstPool = 9 })},
		{"transfer to its own pool", send(func(r *kvpb.TransferRequest) { r.Buffers[0].DstPool = 0 })},
		{"transfer of an unnamed pool", send(func(r *kvpb.TransferRequest) { r.Buffers[0].SrcPool = 5 })},
		{"transfer src to src", send(func(r *kvpb.TransferRequest) { r.Buffers[0].DstPool = 2 })},
		{"transfer of other buffers", send(func(r *kvpb.TransferRequest) { r.Buffers[1].DstPool = 4 })},
		{"transfer of unequal sides", send(func(r *kvpb.TransferRequest) {
			r.Buffers[1] = &kvpb.BufferPair{SrcPool: 6, DstPool: 7}
		})},
		{"transfer of uneven rooms", send(func(r *kvpb.TransferRequest) {
			r.Rooms = []*kvpb.Room{{Id: 1, SrcPages: []uint64{1, 2}, DstPages: []uint64{3}}}
		})},
		{"transfer past the last page", send(func(r *kvpb.TransferRequest) {
			r.Rooms = []*kvpb.Room{{Id: 1, SrcPages: []uint64{8}, DstPages: []uint64{3}}}
		})},
		{"transfer", send(func(*kvpb.TransferRequest) {})},
	}
	py := start(t, dir, filepath.Join("pagetransfer", "kvharness-plugin.json"), "")
	gopl := start(t, dir, "pdtransfer", "")
	sameAnswers(t, steps, py, gopl)

	req := &kvpb.TransferRequest{Buffers: []*kvpb.BufferPair{{SrcPool: 0, DstPool: 1}, {SrcPool: 2, DstPool: 3}},
		Rooms: []*kvpb.Room{room, {Id: 8, SrcPages: []uint64{3, 4}, DstPages: []uint64{1, 2}}}}
	pr, err := transfer.Transfer(context.Background(), py, req)
	noErr(t, err)
	gr, err := transfer.Transfer(context.Background(), gopl, req)
	noErr(t, err)
	if len(pr.Descriptors) != len(gr.Descriptors) || len(pr.Descriptors) < 4 {
		t.Fatalf("descriptors: Python %v, Go %v", pr.Descriptors, gr.Descriptors)
	}
	for i := range pr.Descriptors {
		if pr.Descriptors[i].String() != gr.Descriptors[i].String() {
			t.Errorf("descriptor %d: Python %v, Go %v", i, pr.Descriptors[i], gr.Descriptors[i])
		}
	}
}

// topkread passes the read properties on every layout it declares, and
// its next-token mutant (an unmasked tail) is caught (in the full suite).
func TestReadKernelSuite(t *testing.T) {
	slowPython(t)
	dir := runDir(t)
	var layouts []*layout.Layout
	for _, name := range []string{"bf16", "fp8-paged", "fp8-rows"} {
		l, err := layout.Builtin(name, 128, 64)
		noErr(t, err)
		layouts = append(layouts, l)
	}
	for _, tc := range []struct {
		variant string
		pass    bool
	}{{"", true}, {"next-token", false}} {
		t.Run(cmp.Or(tc.variant, "control"), func(t *testing.T) {
			if !tc.pass {
				pythonMutant(t, "harness/kernels/read's TestReadMutantsKilled")
			}
			p := start(t, dir, filepath.Join("topkread", "kvharness-plugin.json"), tc.variant)
			s := read.Suite(&kind.Session{Plugin: p, Dir: dir}, kind.Params{Variant: tc.variant, Layouts: layouts, Cases: rowCases(60, 20), Seed: 1,
				Setup: kind.Setup{Slots: 1024, Backend: arena.SHM{}}, StopAtFirst: !tc.pass}, read.Config{})
			vs, err := s.Run(context.Background())
			if err != nil {
				t.Fatalf("%q: %v", tc.variant, err)
			}
			wantVerdicts(t, tc.variant, tc.pass, vs)
		})
	}
}

// pagetransfer passes the transfer properties in every profile, and its
// token-item-len mutant is caught (in the full suite).
func TestTransferKernelSuite(t *testing.T) {
	slowPython(t)
	dir := runDir(t)
	for _, tc := range []struct {
		variant string
		pass    bool
	}{{"", true}, {"token-item-len", false}} {
		t.Run(cmp.Or(tc.variant, "control"), func(t *testing.T) {
			if !tc.pass {
				pythonMutant(t, "harness/kernels/transfer's TestTransferMutantsKilled (fp8-item-len)")
			}
			p := start(t, dir, filepath.Join("pagetransfer", "kvharness-plugin.json"), tc.variant)
			s, err := transfer.Suite(&kind.Session{Plugin: p, Dir: dir}, kind.Params{Variant: tc.variant, Cases: rowCases(40, 20), Seed: 1,
				StopAtFirst: !tc.pass, Setup: kind.Setup{Backend: arena.SHM{}}}, transfer.SuiteConfig{})
			noErr(t, err)
			vs, err := s.Run(context.Background())
			if err != nil {
				t.Fatalf("%q: %v", tc.variant, err)
			}
			if tc.pass && len(vs) != len(transfer.Profiles) {
				t.Fatalf("%d verdicts, want %d", len(vs), len(transfer.Profiles))
			}
			wantVerdicts(t, tc.variant, tc.pass, vs)
		})
	}
}

// A Python read or transfer kernel that raises is the plugin's refusal
// (ABORTED with its message); the plugin lives on.
func TestKernelErrorsAreRefusals(t *testing.T) {
	t.Parallel()
	python(t)
	dir := runDir(t)
	p := start(t, dir, filepath.Join("topkread", "kvharness-plugin.json"), "")
	l, err := layout.Builtin("dsv4-main", 512, 64)
	noErr(t, err)
	g, mem := sharedPools(t, dir, []pool.Spec{{Name: "read", Layout: l, Slots: 64}}, 4096)
	attachShared(t, p, mem, g, "")
	st := uint64(g.Staging.Off)
	putInt64s(t, mem, g.Staging.Off+1024, 0, 0)
	err = read.Read(context.Background(), p, &kvpb.ReadRequest{Requests: 1, K: 1, QueriesOffset: st, IndptrOffset: st + 1024,
		TokensOffset: st + 1040, OutSlotsOffset: st + 2048, OutScoresOffset: st + 3072})
	f, ok := plugin.AsFault(err)
	if !ok || f.Code != codes.Aborted || f.Detail != "read kernel failed: ValueError: topkread reads bf16, fp8-paged, fp8-rows, not dsv4-main" {
		t.Errorf("read of a layout the kernel lacks: %v", err)
	}
	if _, err := p.Describe(context.Background(), plugin.Query{HeadDim: 128, PageSize: 64}); err != nil {
		t.Errorf("the plugin did not survive its kernel's exception: %v", err)
	}
}

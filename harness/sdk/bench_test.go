package sdk_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/kvharness/kvharness/harness/protocol/kvpb"
	"github.com/kvharness/kvharness/harness/sdk/store"
	fused "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
)

// benchModes are the bench requests every backend must answer, built
// around a store request.
func benchModes(store *kvpb.StoreRequest, copyBytes, flushBytes uint64) map[string]*kvpb.BenchRequest {
	base := func() *kvpb.BenchRequest {
		return &kvpb.BenchRequest{Store: store, Warmup: 2, Iterations: 7}
	}
	modes := map[string]*kvpb.BenchRequest{}
	modes["per-launch"] = base()
	r := base()
	r.Mode, r.Batch = kvpb.BenchMode_BENCH_BATCHED, 5
	modes["batched"] = r
	r = base()
	r.Mode = kvpb.BenchMode_BENCH_BATCHED
	modes["batched-default"] = r
	r = base()
	r.Cold, r.FlushBytes = true, flushBytes
	modes["cold"] = r
	r = base()
	r.Copy, r.CopyBytes = true, copyBytes
	modes["copy"] = r
	r = base()
	r.Copy = true // copy_bytes from the store's rows
	modes["copy-default"] = r
	r = base()
	r.Empty = true
	modes["empty"] = r
	modes["empty-no-store"] = &kvpb.BenchRequest{Empty: true, Iterations: 7}
	return modes
}

func checkSamples(t *testing.T, name string, req *kvpb.BenchRequest, resp *kvpb.BenchResponse, clock string) {
	t.Helper()
	if len(resp.Ns) != int(req.Iterations) {
		t.Errorf("%s: %d samples; want %d", name, len(resp.Ns), req.Iterations)
	}
	for i, ns := range resp.Ns {
		if !(ns > 0) || ns > 60e9 {
			t.Errorf("%s: sample %d = %v ns", name, i, ns)
		}
	}
	if resp.Clock != clock {
		t.Errorf("%s: clock %q; want %q", name, resp.Clock, clock)
	}
}

// attachedHost is the fused plugin attached to a shared-memory arena with
// a staged 64-row bf16 store.
func attachedHost(t *testing.T) (served, *kvpb.StoreRequest) {
	pl := newPlan([]string{"bf16"}, 128, 64, 1000, 64)
	h := newHostArena(t, pl.size)
	srv := serve(fused.Plugin)
	_, err := srv.Attach(context.Background(), pl.attach(h.desc(), ""))
	must(t, err)
	c := drawCase(rand.New(rand.NewPCG(3, 4)), pl, "")
	c.capacity, c.n, c.padding = 64, 64, store.PadNone
	c.rows, c.loc = c.rows[:0], c.loc[:0]
	for i := range 64 {
		c.rows, c.loc = append(c.rows, make([]uint16, 128)...), append(c.loc, int64(10*i))
	}
	c.stage(h.mem, pl)
	return srv, c.request(pl, false)
}

func TestBenchHost(t *testing.T) {
	srv, store := attachedHost(t)
	for name, req := range benchModes(store, 1<<20, 1<<20) {
		resp, err := srv.Bench(context.Background(), req)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		checkSamples(t, name, req, resp, "monotonic")
		if resp.Device != "cpu" {
			t.Errorf("%s: device %q", name, resp.Device)
		}
	}
}

// TestBenchHostTimesTheWork: a batch of launches takes longer than one,
// and copying 16 MiB takes longer than copying 4 KiB; the samples measure
// the work asked for, not just the clock.
func TestBenchHostTimesTheWork(t *testing.T) {
	srv, store := attachedHost(t)
	median := func(req *kvpb.BenchRequest) float64 {
		resp, err := srv.Bench(context.Background(), req)
		must(t, err)
		return medianOf(resp.Ns)
	}
	small := &kvpb.BenchRequest{Copy: true, CopyBytes: 4 << 10, Iterations: 9}
	big := &kvpb.BenchRequest{Copy: true, CopyBytes: 16 << 20, Iterations: 9}
	if s, b := median(small), median(big); b <= s {
		t.Errorf("copy of 16 MiB: %v ns; of 4 KiB: %v ns", b, s)
	}
	one := &kvpb.BenchRequest{Store: store, Iterations: 9}
	many := &kvpb.BenchRequest{Store: store, Iterations: 9, Mode: kvpb.BenchMode_BENCH_BATCHED, Batch: 100}
	if o, m := median(one), median(many); m <= o {
		t.Errorf("batch of 100 stores: %v ns; one store: %v ns", m, o)
	}
}

func TestBenchRefusals(t *testing.T) {
	ctx := context.Background()
	srv, store := attachedHost(t)
	for name, tc := range map[string]struct {
		req  *kvpb.BenchRequest
		code codes.Code
	}{
		"no iterations":   {&kvpb.BenchRequest{Store: store}, codes.InvalidArgument},
		"no kernel":       {&kvpb.BenchRequest{Iterations: 3}, codes.InvalidArgument},
		"copy no size":    {&kvpb.BenchRequest{Copy: true, Iterations: 3}, codes.InvalidArgument},
		"bad store":       {&kvpb.BenchRequest{Store: &kvpb.StoreRequest{Pool: 9, Capacity: 1}, Iterations: 3}, codes.InvalidArgument},
		"huge iterations": {&kvpb.BenchRequest{Store: store, Iterations: 1 << 31}, codes.InvalidArgument},
		"huge warmup":     {&kvpb.BenchRequest{Store: store, Iterations: 1, Warmup: 1 << 31}, codes.InvalidArgument},
		"huge batch": {&kvpb.BenchRequest{Store: store, Iterations: 1,
			Mode: kvpb.BenchMode_BENCH_BATCHED, Batch: 1 << 31}, codes.InvalidArgument},
		"cold batched": {&kvpb.BenchRequest{Store: store, Iterations: 1, Cold: true,
			Mode: kvpb.BenchMode_BENCH_BATCHED, Batch: 8}, codes.InvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := srv.Bench(ctx, tc.req)
			wantStatus(t, err, tc.code)
		})
	}
	_, err := serve(fused.Plugin).Bench(ctx, &kvpb.BenchRequest{Empty: true, Iterations: 1})
	wantStatus(t, err, codes.FailedPrecondition, "attach")
}

func medianOf(ns []float64) float64 {
	s := slices.Clone(ns)
	slices.Sort(s)
	return s[len(s)/2]
}

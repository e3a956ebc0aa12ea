package main

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kind"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/mutants"
	"github.com/kvharness/kvharness/harness/protocol"
)

// A mutants run over the bundled plugins on --backend cuda passes over a
// plugin with no CUDA kernel (gostore serves the CPU only) and says so;
// the same plugin named with --plugin is an error about the backend.
func TestMutantsPassOverUnservedBackend(t *testing.T) {
	cfg := mutants.Config{Setup: kind.Setup{PageSize: layout.DefaultPageSize, HeadDim: layout.DefaultHeadDim, MaxCapacity: 64}, Cases: 20, Seed: 1}
	run := subjectRun{want: arena.Want{Backend: arena.WantCUDA}, anyDim: true, skipUnserved: true}
	rs, skip, err := run.of(context.Background(), nil, "gostore", cfg)
	if err != nil || len(rs) != 0 {
		t.Fatalf("bundled run over gostore on cuda: results %d, err %v; want it passed over", len(rs), err)
	}
	if skip == nil || skip.name != "gostore" || !slices.Equal(skip.served, []protocol.Backend{protocol.BackendSHM}) {
		t.Fatalf("passed over = %+v, want gostore serving [BACKEND_SHM]", skip)
	}
	run.skipUnserved = false
	_, skip, err = run.of(context.Background(), nil, "gostore", cfg)
	if !errors.Is(err, arena.ErrBackend) || skip != nil {
		t.Fatalf("gostore named on cuda: skip %+v, err %v; want an arena.ErrBackend error", skip, err)
	}
}

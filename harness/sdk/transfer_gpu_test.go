package sdk_test

import (
	"context"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/kernels/transfer"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/sdk"
	"github.com/kvharness/kvharness/harness/sdk/store"
	sdktransfer "github.com/kvharness/kvharness/harness/sdk/transfer"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

// gpuTransfer is pdtransfer as the CUDA tests serve it. Until the SDK
// attaches CUDA arenas for any device kernel (a kind whose kernel serves device memory), a plugin
// needs a DeviceStorer to be attached on the GPU: this one has a store
// that refuses every call.
type gpuTransfer struct {
	sdktransfer.Transferer
	sdktransfer.DeviceTransferer
}

func (gpuTransfer) StoreDevice(context.Context, *store.DeviceCall) error {
	return context.Canceled
}

// gpuTransferPlugin is pdtransfer with the kernel gpuTransfer, bundled as
// "pdtransfer-gpu".
func gpuTransferPlugin() sdk.Plugin {
	p := pdtransfer.Plugin
	k := p.Kernel
	p.Kernel = gpuTransfer{k.(sdktransfer.Transferer), k.(sdktransfer.DeviceTransferer)}
	return p
}

// TestTransferMatchesCPU: for pdtransfer and every variant, the CUDA path
// (one cuMemcpyDtoDAsync per descriptor on the plugin's stream, on an arena
// opened by IPC) answers the same descriptors as the CPU path and leaves
// the same bytes: the oracle finds the same violations and digests, none
// for the correct kernel.
func TestTransferMatchesCPU(t *testing.T) {
	dev := openDevice(t)
	p := startPlugin(t, "pdtransfer-gpu")
	dir, err := rundir.Open()
	must(t, err)
	defer dir.Close()
	ctx := context.Background()
	g := pd.DefaultGeometry(2, 24)
	variants := []string{""}
	for _, v := range pdtransfer.Plugin.Variants {
		variants = append(variants, v.Name)
	}
	for _, variant := range variants {
		start := time.Now()
		g := g
		if pages, ok := crossing[variant]; ok {
			g = pd.DefaultGeometry(2, pages)
		}
		gpu, err := transfer.Open(ctx, p, dir, transfer.Config{Variant: variant, Geometry: g, Seed: 1, Backend: arena.CUDA{Dev: dev}})
		must(t, err)
		cpu, err := transfer.Open(ctx, plugin.InProcess("pdtransfer", sdk.Services(pdtransfer.Plugin)), dir,
			transfer.Config{Variant: variant, Geometry: g, Seed: 1})
		must(t, err)
		compareTransfers(t, variant, gpu, cpu, g)
		t.Logf("pdtransfer %q: 40 cases on the GPU and the CPU agree (%v)", variant, time.Since(start).Round(time.Millisecond))
		gpu.Close(ctx)
		cpu.Close(ctx)
	}
}

// crossing are the mutants wrong only where a page run crosses a boundary
// (run-crosses-64: a multiple of 64 pages), with the pages a pool needs
// for drawn runs to cross one: they fail some cases, not every one.
var crossing = map[string]int{"run-crosses-64": 256}

func compareTransfers(t *testing.T, variant string, gpu, cpu *transfer.Target, g pd.Geometry) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(int64(len(variant))))
	_, sometimes := crossing[variant]
	failed := 0
	for i := range 40 {
		c := (&transfer.Gen{Geometry: g, Profile: transfer.Profiles[i%len(transfer.Profiles)]}).Draw(rng)
		rg, err := gpu.Check(ctx, c)
		must(t, err)
		rc, err := cpu.Check(ctx, c)
		must(t, err)
		if !slices.Equal(rg.Descriptors, rc.Descriptors) || !slices.Equal(rg.Digests, rc.Digests) {
			t.Fatalf("%q %v: descriptors or digests differ\nGPU %v\nCPU %v", variant, c, rg.Descriptors, rc.Descriptors)
		}
		if gs, cs := violationLines(rg), violationLines(rc); !slices.Equal(gs, cs) {
			t.Fatalf("%q %v: violations differ\nGPU %q\nCPU %q", variant, c, gs, cs)
		}
		if rg.Failed() {
			failed++
		}
		if rg.Failed() == (variant == "") && !sometimes {
			t.Fatalf("%q %v: failed %v: %v", variant, c, rg.Failed(), rg.Violations)
		}
	}
	if sometimes && failed == 0 {
		t.Fatalf("%q passed all 40 cases on %d pages: none crossed a boundary", variant, g.Pages)
	}
}

func violationLines(r *transfer.Result) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.String())
	}
	return out
}

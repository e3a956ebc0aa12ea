package transfer

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/oracle"
	"github.com/kvharness/kvharness/harness/pd"
	"github.com/kvharness/kvharness/harness/plugin"
	"github.com/kvharness/kvharness/harness/rundir"
	"github.com/kvharness/kvharness/harness/sdk"
	sdktransfer "github.com/kvharness/kvharness/harness/sdk/transfer"
	"github.com/kvharness/kvharness/harness/target"
	fusedstore "github.com/kvharness/kvharness/plugins/fusedstore/kernel"
	pdtransfer "github.com/kvharness/kvharness/plugins/pdtransfer/kernel"
)

func transferTarget(t *testing.T, p sdk.Plugin, variant string, g pd.Geometry) (*Target, error) {
	t.Helper()
	t.Setenv("KVHARNESS_RUNTIME_DIR", t.TempDir())
	dir, err := rundir.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	tg, err := Open(context.Background(), plugin.InProcess(p.Name, sdk.Services(p)), dir,
		Config{Backend: arena.SHM{}, Variant: variant, Geometry: g, Seed: 3})
	if err == nil {
		t.Cleanup(func() { tg.Close(context.Background()) })
	}
	return tg, err
}

func mustTransferTarget(t *testing.T, p sdk.Plugin, variant string, g pd.Geometry) *Target {
	t.Helper()
	tg, err := transferTarget(t, p, variant, g)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestPDTransferIsExact(t *testing.T) {
	g := pd.DefaultGeometry(2, 40)
	tg := mustTransferTarget(t, pdtransfer.Plugin, "", g)
	rng := rand.New(rand.NewSource(1))
	for _, p := range Profiles {
		gen := &Gen{Geometry: g, Profile: p}
		for range 25 {
			c := gen.Draw(rng)
			res, err := tg.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() {
				t.Fatalf("%s %v: %v", p, c, res.Violations)
			}
			if len(res.Digests) != len(c.Rooms)*len(g.Buffers) || len(res.Rejected()) != 0 || len(res.Descriptors) < len(g.Buffers) {
				t.Fatalf("%v: %d digests, rejected %v, %d descriptors", c, len(res.Digests), res.Rejected(), len(res.Descriptors))
			}
		}
	}
}

// TestPDTransferMutants: each variant fails a small case with the property
// and the buffer its bug belongs to, and names the descriptor at fault
// where there is one.
func TestPDTransferMutants(t *testing.T) {
	g := pd.DefaultGeometry(1, 40)
	c := &Case{Geometry: g, Rooms: []Room{{ID: 7, Src: []int64{3, 4, 5}, Dst: []int64{10, 20, 21}}}}
	for _, tc := range []struct {
		variant string
		kind    oracle.Kind
		buffer  string
		desc    bool
		says    string
	}{
		{"fp8-item-len", BadDescriptor, "L0.kv", true, "item_len 8448, but L0.kv's pages are 16384 bytes"},
		{"skip-buffer", Coverage, "L0.indexk", false, "no descriptor names buffer L0.indexk"},
		{"base-addr-dedup", Coverage, "L0.state", true, "carved from allocation L0.kv together with L0.kv: were the two merged by base address? descriptor #0 sends L0.kv's copy of this page"},
		{"legacy-page-map", Coverage, "L0.indexk", true, "L0.kv's page table (shift 0), not L0.indexk's (shift 11)"},
		{"last-run-truncated", Coverage, "L0.kv", true, "a run cut short"},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			tg := mustTransferTarget(t, pdtransfer.Plugin, tc.variant, g)
			res, err := tg.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Primary() != tc.kind {
				t.Fatalf("primary %s, want %s: %v", res.Primary(), tc.kind, res.Violations)
			}
			v := res.Violations[0]
			if v.Kind != tc.kind || v.Buffer != tc.buffer || v.Room != 0 || (v.Descriptor >= 0) != tc.desc || !strings.Contains(v.Detail, tc.says) {
				t.Errorf("first violation %v; want %s on room 0 buffer %s (descriptor named: %v) saying %q", v, tc.kind, tc.buffer, tc.desc, tc.says)
			}
			if len(res.Rejected()) != 1 || !res.Has(PageMismatch) {
				t.Errorf("rejected rooms %v, page violations %v: the bytes are wrong too", res.Rejected(), res.Has(PageMismatch))
			}
		})
	}
}

// flaky wraps pdtransfer's kernel with a misbehaviour.
type flaky struct {
	calls   int
	staging bool // write a byte into staging
	wobble  bool // every other call, write one more byte into a destination guard
}

func (f *flaky) Transfer(ctx context.Context, c *sdktransfer.Call) ([]sdk.Descriptor, error) {
	ds, err := pdtransfer.Plugin.Kernel.(sdktransfer.Transferer).Transfer(ctx, c)
	f.calls++
	if f.staging {
		c.Arena[len(c.Arena)-1] ^= 1
	}
	if f.wobble && f.calls%2 == 0 {
		c.Arena[c.Buffers[0].Dst.Base-1] ^= 1
	}
	return ds, err
}

func withKernel(k any) sdk.Plugin {
	p := pdtransfer.Plugin
	p.Kernel = k
	return p
}

func TestTransferDeterminismAndStaging(t *testing.T) {
	g := pd.DefaultGeometry(1, 8)
	c := &Case{Geometry: g, Rooms: []Room{{ID: 1, Src: []int64{1}, Dst: []int64{2}}}}
	res, err := mustTransferTarget(t, withKernel(&flaky{wobble: true}), "", g).Check(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Primary() != oracle.Determinism || res.Violations[0].Buffer != "L0.kv" || res.Violations[0].Off != -1 {
		t.Errorf("wobbling plugin: %v", res.Violations)
	}
	res, err = mustTransferTarget(t, withKernel(&flaky{staging: true}), "", g).Check(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Primary() != Outside || !strings.Contains(res.Violations[0].Detail, "staging") {
		t.Errorf("staging writer: %v", res.Violations)
	}
}

// liar declares the bf16 page as 132 bytes a token.
func liar(variant string, d, p int) []sdk.Geometry {
	gs := pdtransfer.Plugin.Geometry(variant, d, p)
	for i := range gs {
		if gs[i].Layout == "bf16" {
			gs[i].BytesPerToken, gs[i].BytesPerPage = d+4, (d+4)*p
		}
	}
	return gs
}

func TestTransferGeometryAndSupport(t *testing.T) {
	g := pd.DefaultGeometry(1, 8)
	p := pdtransfer.Plugin
	p.Geometry = liar
	tg := mustTransferTarget(t, p, "", g)
	if len(tg.GeometryViolations) != 1 || tg.GeometryViolations[0].Buffer != "L0.kv" {
		t.Errorf("geometry violations %v", tg.GeometryViolations)
	}
	res, err := tg.Check(context.Background(), &Case{Geometry: g, Rooms: []Room{{Src: []int64{0}, Dst: []int64{1}}}})
	if err != nil || res.Primary() != oracle.Geometry {
		t.Errorf("check: %v, %v", err, res)
	}
	if _, err := transferTarget(t, fusedstore.Plugin, "", g); !errors.Is(err, target.ErrUnsupported) {
		t.Errorf("a store plugin as a transfer target: %v", err)
	}
	g.Buffers[0].Layout = "dsv4-main"
	if _, err := transferTarget(t, p, "", g); err == nil {
		t.Error("a layout of another head dimension was accepted")
	}
}

func TestTransferCaseMustMatchTheTarget(t *testing.T) {
	tg := mustTransferTarget(t, pdtransfer.Plugin, "", pd.DefaultGeometry(1, 8))
	other := pd.DefaultGeometry(2, 8)
	if _, err := tg.Check(context.Background(), &Case{Geometry: other, Rooms: []Room{{Src: []int64{0}, Dst: []int64{1}}}}); err == nil {
		t.Error("a case over another geometry was checked")
	}
	bad := &Case{Geometry: tg.Geometry, Rooms: []Room{{Src: []int64{0, 0}, Dst: []int64{1, 2}}}}
	if _, err := tg.Check(context.Background(), bad); err == nil {
		t.Error("an invalid case was checked")
	}
}

package load

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/cuda"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/protocol/kvpb"
)

// benchGeometry is the bench's shape: four layers of kv, indexk and
// scales, 64 pages of 64 tokens each, all loaded: 6.9 MB per load in 768
// page copies.
func benchGeometry() Geometry { return DefaultGeometry(4, 64, 64) }

// BenchmarkLoadPath times layerload's whole load path (every layer's page
// copies, the consumer's gates, the wait) against one plain copy of the
// same bytes from the host pool to device memory, inside the plugin
// (LoadBench: no RPC in the timed loop), on the CPU and, where there is
// one, the GPU. It reports the medians of each b.N's 20 samples: µs and
// GB/s of each path, and the load's share of the copy's speed.
func BenchmarkLoadPath(b *testing.B) {
	backends := []arena.Backend{arena.SHM{}}
	if cuda.Available() == nil {
		dev, err := cuda.Open(0)
		if err != nil {
			b.Fatal(err)
		}
		defer dev.Close()
		backends = append(backends, arena.CUDA{Dev: dev})
	}
	for _, backend := range backends {
		for _, variant := range []string{"", "counter", "staged"} {
			b.Run(fmt.Sprintf("backend=%s/variant=%s", backend.Place(), orNone(variant)), func(b *testing.B) {
				benchLoad(b, backend, variant)
			})
		}
	}
}

func orNone(v string) string {
	if v == "" {
		return "events"
	}
	return v
}

func benchLoad(b *testing.B, backend arena.Backend, variant string) {
	p, dir := plugintest.Start(b, "layerload")
	g := benchGeometry()
	t, err := Open(context.Background(), p, dir, Config{Variant: variant, Seed: 1, Backend: backend, Geometry: g})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close(context.Background())
	c := &Case{Geometry: g, Op: OpLoad, Layers: g.Layers, Buffers: []string{BufferKV, BufferIndexK, BufferScales}}
	c.Order = canonicalOrder(c.Buffers)
	for i := range g.Pages {
		c.Pages = append(c.Pages, Page{Src: i, Dst: i})
	}
	req := &kvpb.LoadBenchRequest{Load: t.request(c, t.slots(c)), Warmup: 5, Iterations: 20}
	var loads, copies []float64
	var bytes uint64
	for b.Loop() {
		resp, err := LoadBench(context.Background(), p, req)
		if err != nil {
			b.Fatal(err)
		}
		loads, copies, bytes = append(loads, resp.LoadNs...), append(copies, resp.CopyNs...), resp.Bytes
	}
	l, cp := median(loads), median(copies)
	b.ReportMetric(l/1e3, "load-µs")
	b.ReportMetric(cp/1e3, "copy-µs")
	b.ReportMetric(float64(bytes)/l, "load-GB/s")
	b.ReportMetric(float64(bytes)/cp, "copy-GB/s")
	b.ReportMetric(cp/l, "load/copy")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

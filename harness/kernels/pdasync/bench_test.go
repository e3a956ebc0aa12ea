package pdasync

import (
	"context"
	"testing"

	"github.com/kvharness/kvharness/harness/arena"
	"github.com/kvharness/kvharness/harness/internal/plugintest"
	"github.com/kvharness/kvharness/harness/pd"
)

// benchGeometry is the bench's memory: one DeepSeek-V4-like layer of 512
// pages a pool (bf16 16 KiB pages and two fp8 8.25 KiB ones: 16.5 MiB a
// side).
var benchGeometry = pd.DefaultGeometry(1, 512)

// BenchmarkTransfer times the pdasync engine moving 16 rooms of 32 pages
// in every buffer (4 handles each, 64 in all) from the prefill process's
// arena into the decode process's, from the moment every gate opens to the
// last handle's notification, against one copy of the same bytes between
// the two arenas in the harness's process. It reports both in GB/s:
//
//	go test -run '^$' -bench BenchmarkTransfer -benchtime 20x ./harness/kernels/pdasync
func BenchmarkTransfer(b *testing.B) {
	p, dir := plugintest.Start(b, "pdasync")
	sys, err := Spawned(context.Background(), p, dir, Config{PrefillBackend: arena.SHM{}, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sys.Close(context.Background())
	benchTransfer(b, sys, BenchCase(benchGeometry, 16, 4))
}

// benchTransfer runs one bench case b.N times on sys and reports the
// engine's and the reference copy's throughput.
func benchTransfer(b *testing.B, sys *System, c *Case) {
	t, err := sys.Target(context.Background(), c.Geometry)
	if err != nil {
		b.Fatal(err)
	}
	var engine, ref float64
	var bytes int
	b.ResetTimer()
	for i := range b.N {
		r, err := t.Bench(context.Background(), c, i == 0)
		if err != nil {
			b.Fatal(err)
		}
		engine += r.Engine.Seconds()
		ref += r.Reference.Seconds()
		bytes = r.Bytes
	}
	b.ReportMetric(float64(bytes)*float64(b.N)/engine/1e9, "engine-GB/s")
	b.ReportMetric(float64(bytes)*float64(b.N)/ref/1e9, "copy-GB/s")
	b.ReportMetric(float64(bytes), "bytes/op")
}

package fuzz

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/benchrun"
	"github.com/kvharness/kvharness/harness/compare"
	"github.com/kvharness/kvharness/harness/kernels"
	"github.com/kvharness/kvharness/harness/kernels/store"
	"github.com/kvharness/kvharness/harness/layout"
	"github.com/kvharness/kvharness/harness/report"
	"github.com/kvharness/kvharness/harness/results"
	"github.com/kvharness/kvharness/harness/workload"
)

// The parsers of every file a user hands kvharness must turn any input into
// a value or an error: never a panic, never a value that fails its own
// validation. Run one with e.g.
//
//	go test -run='^$' -fuzz='^FuzzReproFile$' -fuzztime=1m ./fuzz

func FuzzReproFile(f *testing.F) {
	l, _ := layout.Builtin("bf16", 16, 4)
	good := &report.Repro{Version: 1, Kernel: store.Name, Plugin: "fusedstore", Layout: l.JSON(), Slots: 8,
		Case: &store.Case{Padding: store.PadSink, Valid: 1, Loc: []int64{3, 0},
			Rows: []workload.Row{{Kind: workload.RowNormal, Seed: 1}, {Kind: workload.RowGarbage}}}}
	data, _ := jsonOf(good)
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(`{"version": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, l, err := report.ParseRepro(data, kernels.Decode)
		if err != nil {
			return
		}
		if _, err := kernels.Decode(r.Kernel, mustJSON(t, r.Case), r.Slots); err != nil || l == nil {
			t.Fatalf("accepted an invalid repro: %v", err)
		}
	})
}

func FuzzLayoutFile(f *testing.F) {
	for _, n := range layout.Names() {
		l, _ := layout.Builtin(n, 0, 16)
		f.Add(l.JSON())
	}
	for _, n := range layout.ModelNames() {
		l, _ := layout.Builtin(n, 0, 32)
		f.Add(l.JSON())
	}
	f.Add([]byte(`{"name":"x","head_dim":16,"fields":[{"name":"v","kind":"e4m3","to":16,"group":3}],"planes":[["v"]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := layout.Parse(data, 8)
		if err != nil {
			return
		}
		if l.BytesPerToken() <= 0 || l.PageBytes() < l.PageSize*l.BytesPerToken() {
			t.Fatalf("accepted layout with %d B/token, %d B/page", l.BytesPerToken(), l.PageBytes())
		}
		if l, err = l.ForPool(2 * l.PageSize); err != nil {
			return
		}
		for s := range int64(2 * l.PageSize) {
			for _, sp := range l.Footprint(s) {
				if o, ok := l.Locate(sp.Off, 2*l.PageSize); !ok || o.Slot != s {
					t.Fatalf("slot %d: Locate(%d) = %+v, %v", s, sp.Off, o, ok)
				}
			}
		}
		l.Encode(make([]uint16, l.HeadDim))
	})
}

func FuzzMatrixFile(f *testing.F) {
	f.Add([]byte(`{"plugins": ["fusedstore"], "tokens": [1, 512], "modes": ["graph"]}`))
	f.Add([]byte(`{"plugins": ["x"], "per_launch": {"min_samples": -1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := benchrun.ParseMatrix(data)
		if err == nil && m.Validate() != nil {
			t.Fatal("accepted an invalid matrix")
		}
	})
}

func FuzzResultsLog(f *testing.F) {
	f.Add([]byte("{\"plugin\":\"p\",\"kernel\":\"store\",\"layout\":\"bf16\",\"tokens\":1}\n{\"trunc"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		results.ReadLog(bytes.NewReader(data), "fuzz.jsonl")
	})
}

func FuzzBenchFile(f *testing.F) {
	base := "goos: linux\nBenchmarkStore/tokens=1 10 100 ns/op 5 GB/s\n"
	f.Add([]byte(base))
	f.Add([]byte("BenchmarkX 1 2 ns/op\nBenchmarkX 1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		compare.Compare("base", strings.NewReader(base), "new", bytes.NewReader(data), compare.Options{})
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonOf encodes v as indented JSON, as the harness writes its files.
func jsonOf(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

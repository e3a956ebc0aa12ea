package benchrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvharness/kvharness/harness/results"
)

func TestParseMatrixRejects(t *testing.T) {
	for name, tc := range map[string]struct{ json, want string }{
		"unknown key":      {`{"plugins": ["a"], "tokenz": [1]}`, "unknown field"},
		"layout typo":      {`{"plugins": ["a"], "layouts": ["bf16", "fp8-pagd"]}`, `layout "fp8-pagd": unknown`},
		"no plugins":       {`{"plugins": []}`, "no plugins"},
		"tokens > slots":   {`{"plugins": ["a"], "tokens": [9], "slots": 8}`, "tokens 9"},
		"only cold batch":  {`{"plugins": ["a"], "caches": ["cold"], "timings": ["batched"]}`, "make no cell"},
		"trailing":         {`{"plugins": ["a"]} {}`, "data after the first JSON value"},
		"empty":            {``, "no JSON value"},
		"mode warp":        {`{"plugins": ["a"], "modes": ["warp"]}`, `modes: "warp" is not one; want "eager" or "graph"`},
		"cache lukewarm":   {`{"plugins": ["a"], "caches": ["hot", "lukewarm"]}`, `caches: "lukewarm" is not one; want "hot" or "cold"`},
		"timing typo":      {`{"plugins": ["a"], "timings": ["per_launch"]}`, `timings: "per_launch" is not one`},
		"mode twice":       {`{"plugins": ["a"], "modes": ["eager", "eager"]}`, `modes: "eager" is given twice`},
		"head_dim 100":     {`{"plugins": ["a"], "head_dim": 100}`, "head_dim 100: want a multiple of 8"},
		"head_dim 0":       {`{"plugins": ["a"], "head_dim": 0}`, "head_dim 0"},
		"head_dim huge":    {`{"plugins": ["a"], "head_dim": 1048576}`, "head_dim 1048576"},
		"page_size 0":      {`{"plugins": ["a"], "page_size": 0}`, "page_size 0"},
		"page_size huge":   {`{"plugins": ["a"], "page_size": 70000}`, "page_size 70000"},
		"rotate < 0":       {`{"plugins": ["a"], "rotate": -2}`, "rotate -2"},
		"slot_run > slots": {`{"plugins": ["a"], "tokens": [4], "slots": 8, "slot_run": 9}`, "slot_run 9"},
		"short of runs":    {`{"plugins": ["a"], "tokens": [9], "slots": 10, "slot_run": 4}`, "hold 8 in whole runs of 4"},
		"rotate > 64":      {`{"plugins": ["a"], "rotate": 65}`, "rotate 65"},
	} {
		if _, err := ParseMatrix([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, tc.want)
		}
	}
	// vLLM's kernel tests use head size 120: a multiple of 8 is enough.
	if m, err := ParseMatrix([]byte(`{"plugins": ["a"], "head_dim": 120, "modes": ["eager"], "caches": ["cold"], "timings": ["per-launch"]}`)); err != nil || m.HeadDim != 120 {
		t.Errorf("head_dim 120, cold per-launch eager: %v; want it accepted", err)
	}
	m, err := ParseMatrix([]byte(`{"plugins": ["a"], "layouts": ["all", "bf16"]}`))
	if err != nil || m.cacheTimings() != 3 {
		t.Errorf("default caches and timings: %v, %d cache × timing cells; want 3 (cold batched dropped)", err, m.cacheTimings())
	}
}

func TestMeasurable(t *testing.T) {
	for _, tc := range []struct {
		c    results.Cache
		t    results.Timing
		want bool
	}{
		{results.Hot, results.PerLaunch, true},
		{results.Hot, results.Batched, true},
		{results.Cold, results.PerLaunch, true},
		{results.Cold, results.Batched, false},
	} {
		if got := measurable(tc.c, tc.t); got != tc.want {
			t.Errorf("measurable(%s, %s) = %v, want %v", tc.c, tc.t, got, tc.want)
		}
	}
}

// TestHostPacedWarns: a cell whose plugin kept host-paced samples is named
// in a warning, with the count; others are not.
func TestHostPacedWarns(t *testing.T) {
	id := results.Identity{Plugin: "fusedstore", Kernel: "store", Layout: "bf16", HeadDim: 128, PageSize: 64, Tokens: 512,
		Mode: results.Graph, Cache: results.Hot, Timing: results.Batched}
	quiet := results.Cell{Identity: id}
	id.Tokens = 1
	loud := results.Cell{Identity: id, HostPaced: 3}
	ws := hostPaced([]results.Cell{quiet, loud})
	if len(ws) != 1 || !strings.Contains(ws[0].Error(), string(loud.Key())) || !strings.Contains(ws[0].Error(), "3 batched samples") {
		t.Fatalf("warnings %v; want one naming %s and its 3 samples", ws, loud.Key())
	}
}

// TestNameField: a rotation of one data set (or runs of one slot) names the
// same benchmarks as none, so 1 and an old matrix without the key compare
// as equals.
func TestNameField(t *testing.T) {
	for rotate, want := range map[int]int{0: 0, 1: 0, 2: 2, 64: 64} {
		m := Matrix{Rotate: rotate}
		if got := nameField(m.Rotate); got != want {
			t.Errorf("rotate %d: identity field %d, want %d", rotate, got, want)
		}
		if got := m.rotations(); got != max(rotate, 1) {
			t.Errorf("rotate %d: %d data sets", rotate, got)
		}
	}
}

// TestLoadMatrixBounded: a matrix path that is a device of endless bytes,
// a file past the bound or a folder is an error naming it, read no
// further than the bound.
func TestLoadMatrixBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"plugins": ["`+strings.Repeat("a", MaxMatrixBytes)+`"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero":                        "/dev/zero is not a regular file",
		big:                                "more than 1048576 bytes",
		dir:                                "is not a regular file (a folder)",
		filepath.Join(dir, "missing.json"): "give the path of an existing file",
	} {
		if _, err := LoadMatrix(path); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("LoadMatrix(%s): %v; want an error naming it and %q", path, err, want)
		}
	}
	ok := filepath.Join(dir, "ok.json")
	os.WriteFile(ok, []byte(`{"plugins": ["fusedstore"], "modes": ["eager"]}`), 0o644)
	if m, err := LoadMatrix(ok); err != nil || len(m.Modes) != 1 {
		t.Errorf("LoadMatrix(ok): %+v, %v", m.Modes, err)
	}
}

// Package golden compares test output with files under testdata: the one
// place kvharness's golden files are read, written and diffed. Run a
// package's tests with -update to rewrite its golden files from the
// current output; on a mismatch the test writes the output beside the
// golden file as NAME.got-EXT (or NAME.got) for diffing.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update is the -update flag every package with golden files shares.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata from the current output")

// Check compares got with the golden file at path (under testdata, by
// convention); with -update it rewrites the file first.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		gotPath := gotFile(path)
		os.WriteFile(gotPath, got, 0o644)
		t.Errorf("output differs from %s; wrote %s (go test -update to accept) (-want +got):\n%s", path, gotPath, diff)
	}
}

// gotFile is where a mismatching output goes: testdata/x.stdout becomes
// testdata/x.got-stdout, testdata/x.golden becomes testdata/x.got.
func gotFile(path string) string {
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext)
	if ext == ".golden" || ext == "" {
		return base + ".got"
	}
	return base + ".got-" + strings.TrimPrefix(ext, ".")
}
